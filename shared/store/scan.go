package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"golang.org/x/sync/errgroup"

	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// Scanned is one item of a scan, decoded by its key: exactly one of
// Session, Ledger, Trigger and Environment is set, or Err says why the
// item of that kind did not decode, or none is (another item: an owner's
// trigger count, a trigger's run, an owner's default environment pointer,
// name claim or count of environments).
type Scanned struct {
	Session     *session.Record
	Ledger      *ledger.Row
	Trigger     *trigger.Trigger
	Environment *environment.Environment
	Kind        ItemKind
	Err         error
}

// ItemKind is the kind of a scanned item, by its key.
type ItemKind int

// The kinds of item in the table.
const (
	KindOther ItemKind = iota
	KindSession
	KindLedger
	KindTrigger
	KindEnvironment
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
func decodeScanned(item Item) Scanned {
	s := Scanned{Kind: kindOf(item)}
	switch s.Kind {
	case KindSession:
		s.Session, s.Err = DecodeSession(item)
	case KindLedger:
		s.Ledger, s.Err = DecodeLedger(item)
	case KindTrigger:
		s.Trigger, s.Err = decodeTrigger(item)
	case KindEnvironment:
		s.Environment, s.Err = decodeEnvironment(item)
	}
	return s
}
