package store

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/trigger"
)

// ListRuns returns the trigger and up to limit of its runs, newest slot
// first, those older than the run after (a zero slot: from the newest), leaving
// out the expired; more says whether older ones follow. The first page is
// one strongly consistent query, which reads the trigger with its newest
// runs; a later page reads the trigger, then queries. ErrNotFound when
// the trigger does not exist (its runs may outlive it, until they
// expire); an *InvalidTriggerError when it does not decode; with a run
// that does not decode, the trigger and the fault.
func (t *Table) ListRuns(ctx context.Context, triggerID string, after trigger.Run, limit int, now time.Time) (tr *trigger.Trigger, runs []trigger.Run, more bool, err error) {
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
	if !after.At.IsZero() {
		if tr, err = t.GetTrigger(ctx, triggerID); err != nil {
			return nil, nil, false, err
		}
		in.ExclusiveStartKey = runKey(triggerID, after)
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
