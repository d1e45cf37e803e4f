package store

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// Scanned is one item of a scan, decoded by its key: exactly one of
// Session, Ledger and Trigger is set, or Err says why the item of that
// kind did not decode, or none is (another item: an owner's trigger
// count, a trigger's run).
type Scanned struct {
	Session *session.Record
	Ledger  *session.LedgerRow
	Trigger *trigger.Trigger
	Kind    ItemKind
	Err     error
}

// ItemKind is the kind of a scanned item, by its key.
type ItemKind int

// The kinds of item in the table.
const (
	KindOther ItemKind = iota
	KindSession
	KindLedger
	KindTrigger
)

// Scan reads every item of the table, eventually consistent, in segments
// scanned in parallel, page by page, and hands each page's items, decoded,
// to visit. Pages of different segments are handed over concurrently:
// visit must be safe for that. The first error, visit's or the table's,
// stops the scan.
func (t *Table) Scan(ctx context.Context, segments int, visit func([]Scanned) error) error {
	g, ctx := errgroup.WithContext(ctx)
	for seg := range segments {
		g.Go(func() error {
			p := dynamodb.NewScanPaginator(t.client, &dynamodb.ScanInput{
				TableName: aws.String(t.name), Segment: aws.Int32(int32(seg)), TotalSegments: aws.Int32(int32(segments)),
			})
			for p.HasMorePages() {
				page, err := p.NextPage(ctx)
				if err != nil {
					return failed("scan", err)
				}
				out := make([]Scanned, len(page.Items))
				for i, item := range page.Items {
					out[i] = decodeScanned(item)
				}
				if err := visit(out); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// decodeScanned decodes an item by its key.
func decodeScanned(item session.Item) Scanned {
	pk, _ := item["PK"].(*types.AttributeValueMemberS)
	sk, _ := item["SK"].(*types.AttributeValueMemberS)
	if pk == nil || sk == nil {
		return Scanned{}
	}
	var s Scanned
	switch {
	case strings.HasPrefix(pk.Value, "SESSION#") && sk.Value == "METADATA":
		s.Kind = KindSession
		s.Session, s.Err = session.Decode(item)
	case strings.HasPrefix(pk.Value, "OPERATION#") && sk.Value == "LEDGER":
		s.Kind = KindLedger
		s.Ledger, s.Err = session.DecodeLedger(item)
	case strings.HasPrefix(pk.Value, triggerPrefix) && sk.Value == triggerSortKey:
		s.Kind = KindTrigger
		s.Trigger, s.Err = decodeTrigger(item)
	}
	return s
}

// ClearSavedAllocation removes a trigger's saved allocation, so that the
// effective default applies, and moves its version on, on the condition
// that the trigger is still as it was seen: there, with the same active
// flag, next run, version and saved allocation. When that condition fails
// the error is ErrTriggerMoved.
func (t *Table) ClearSavedAllocation(ctx context.Context, seen *trigger.Trigger) error {
	// Only the attribute that holds it is removed: the condition holds the
	// other absent (the embedded endpoint's REMOVE of an absent attribute
	// skips the rest of the clause).
	version := expression.Name("version")
	update := expression.Set(version, expression.Plus(expression.IfNotExists(version, expression.Value(0)), expression.Value(1)))
	cond := unchangedSince(seen).And(unchanged("sandboxAllocation", seen.SavedAllocation))
	if seen.SavedAllocation != "" {
		update = update.Remove(expression.Name("sandboxAllocation"))
	}
	if seen.SavedRequest == nil {
		cond = cond.And(expression.AttributeNotExists(expression.Name("sandboxAllocationRequest")))
	} else {
		update = update.Remove(expression.Name("sandboxAllocationRequest"))
		cond = cond.And(expression.AttributeExists(expression.Name("sandboxAllocationRequest")))
	}
	e, err := expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
	if err != nil {
		return err
	}
	_, err = t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(t.name), Key: triggerKey(seen.ID),
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	})
	return moved("clear saved allocation", err)
}
