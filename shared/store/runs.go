package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// RunTTL is how long a trigger's run is kept: the table's TTL deletes it
// once its expiresAt has passed, and until then it is read as gone.
const RunTTL = 30 * 24 * time.Hour

// runPrefix begins the sort key of a trigger's runs, in its own partition
// (TRIGGER#<id>), before the slot: the runs sort by slot, and all of them
// before the trigger item's sort key (TRIGGER).
const runPrefix = "RUN#"

// runItem is a run's item: a slot of one trigger, what it did, and when
// the table's TTL deletes it.
type runItem struct {
	PK         string `dynamodbav:"PK"`
	SK         string `dynamodbav:"SK"`
	TriggerID  string `dynamodbav:"triggerId"`
	Slot       string `dynamodbav:"slot"`
	Status     string `dynamodbav:"status"`
	SessionID  string `dynamodbav:"sessionId,omitempty"`
	Error      string `dynamodbav:"error,omitempty"`
	RecordedAt string `dynamodbav:"recordedAt"`
	ExpiresAt  int64  `dynamodbav:"expiresAt"`
}

// runPut is the transaction item that records a run of a trigger. A slot
// has one run: the write that records it is the one that moves the
// trigger past the slot, on its condition.
func runPut(table, triggerID string, run trigger.Run) (types.TransactWriteItem, error) {
	item, err := attributevalue.MarshalMap(runItem{
		PK: triggerPrefix + triggerID, SK: runPrefix + formatTime(run.At), TriggerID: triggerID,
		Slot: formatTime(run.At), Status: run.Status, SessionID: run.SessionID, Error: run.Error,
		RecordedAt: formatTime(run.RecordedAt), ExpiresAt: run.RecordedAt.Add(RunTTL).Unix(),
	})
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: item}}, nil
}

// ListRuns returns the trigger and up to limit of its runs, newest slot
// first, those older than the slot after (zero: from the newest), leaving
// out the expired; more says whether older ones follow. The first page is
// one strongly consistent query, which reads the trigger with its newest
// runs; a later page reads the trigger, then queries. ErrNotFound when
// the trigger does not exist (its runs may outlive it, until they
// expire); an *InvalidTriggerError when it does not decode; with a run
// that does not decode, the trigger and the fault.
func (t *Table) ListRuns(ctx context.Context, triggerID string, after time.Time, limit int, now time.Time) (tr *trigger.Trigger, runs []trigger.Run, more bool, err error) {
	pk := triggerPrefix + triggerID
	kc, err := expression.NewBuilder().WithKeyCondition(expression.Key("PK").Equal(expression.Value(pk)).
		And(expression.Key("SK").Between(expression.Value(runPrefix), expression.Value(triggerSortKey)))).Build()
	if err != nil {
		return nil, nil, false, err
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(t.name), ConsistentRead: aws.Bool(true), ScanIndexForward: aws.Bool(false),
		KeyConditionExpression: kc.KeyCondition(), ExpressionAttributeNames: kc.Names(), ExpressionAttributeValues: kc.Values(),
		Limit: aws.Int32(int32(limit + 2)), // the trigger, a page, and one to tell whether more follow
	}
	if !after.IsZero() {
		if tr, err = t.GetTrigger(ctx, triggerID); err != nil {
			return nil, nil, false, err
		}
		in.ExclusiveStartKey = session.Item{
			"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: runPrefix + formatTime(after)},
		}
		in.Limit = aws.Int32(int32(limit + 1))
	}
	for {
		out, err := t.client.Query(ctx, in)
		if err != nil {
			return nil, nil, false, failed("list runs", err)
		}
		for _, item := range out.Items {
			sk, _ := item["SK"].(*types.AttributeValueMemberS)
			if sk != nil && sk.Value == triggerSortKey {
				if tr, err = decodeTrigger(item); err != nil {
					return nil, nil, false, err
				}
				continue
			}
			if tr == nil {
				return nil, nil, false, ErrNotFound // runs of a deleted trigger
			}
			run, err := decodeRun(item)
			if err != nil {
				return tr, nil, false, err // the trigger, for its owner to be judged first
			}
			if !now.Before(run.RecordedAt.Add(RunTTL)) {
				continue // expired: the TTL deletes it soon
			}
			if len(runs) == limit {
				return tr, runs, true, nil
			}
			runs = append(runs, run)
		}
		if len(out.LastEvaluatedKey) == 0 {
			if tr == nil {
				return nil, nil, false, ErrNotFound
			}
			return tr, runs, false, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// decodeRun reads a run's item; a run that does not decode is a fault
// that names the attribute, never its value.
func decodeRun(item session.Item) (trigger.Run, error) {
	var it runItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return trigger.Run{}, failed("list runs", errors.New("a run item does not decode"))
	}
	at, aerr := time.Parse(session.TimeFormat, it.Slot)
	recorded, rerr := time.Parse(session.TimeFormat, it.RecordedAt)
	if aerr != nil || rerr != nil {
		return trigger.Run{}, failed("list runs", fmt.Errorf("run %s: its slot or recordedAt is not a time", strings.TrimPrefix(it.SK, runPrefix)))
	}
	run := trigger.Run{At: at, SessionID: it.SessionID, Status: it.Status, Error: it.Error, RecordedAt: recorded}
	return run, nil
}
