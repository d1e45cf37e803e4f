package store

import (
	"context"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/trigger"
)

// RunPosition is a place in a trigger's list of runs: after a run, as its
// key was stored. It is "" before the newest.
type RunPosition string

// Valid reports whether p is a place in the list of runs: "", or the key
// of a run.
func (p RunPosition) Valid() bool {
	return p == "" || strings.HasPrefix(string(p), runPrefix) && len(p) <= maxRunKey
}

// maxRunKey bounds a run's sort key: the prefix, a start, an id.
const maxRunKey = len(runPrefix) + len(runTimeFormat) + 1 + 128

// ListRuns returns the trigger and up to limit of its runs, newest first
// to the millisecond of their start, those after the position (""; from
// the newest), leaving out the expired; next is the position after the
// last of them when older ones follow, else "". The first page is one
// strongly consistent query, which reads the trigger with its newest
// runs; a later page reads the trigger, then queries. ErrNotFound when
// the trigger does not exist (its runs may outlive it, until they
// expire); an *InvalidTriggerError when it does not decode; with a run
// that does not decode, the trigger and the fault. The position is one
// that Valid accepts.
func (t *Table) ListRuns(ctx context.Context, triggerID string, after RunPosition, limit int, now time.Time) (tr *trigger.Trigger, runs []trigger.Run, next RunPosition, err error) {
	pk := triggerPrefix + triggerID
	kc, err := expression.NewBuilder().WithKeyCondition(expression.Key("PK").Equal(expression.Value(pk)).
		And(expression.Key("SK").Between(expression.Value(runPrefix), expression.Value(triggerSortKey)))).Build()
	if err != nil {
		return nil, nil, "", err
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(t.name), ConsistentRead: aws.Bool(true), ScanIndexForward: aws.Bool(false),
		KeyConditionExpression: kc.KeyCondition(), ExpressionAttributeNames: kc.Names(), ExpressionAttributeValues: kc.Values(),
		Limit: aws.Int32(int32(limit + 2)), // the trigger, a page, and one to tell whether more follow
	}
	if after != "" {
		if tr, err = t.GetTrigger(ctx, triggerID); err != nil {
			return nil, nil, "", err
		}
		in.ExclusiveStartKey = key(pk, string(after))
		in.Limit = aws.Int32(int32(limit + 1))
	}
	var last string // the key of the last run kept
	for {
		out, err := t.client.Query(ctx, in)
		if err != nil {
			return nil, nil, "", failed("list runs", err)
		}
		for _, item := range out.Items {
			sk, _ := item["SK"].(*types.AttributeValueMemberS)
			if sk != nil && sk.Value == triggerSortKey {
				if tr, err = decodeTrigger(item); err != nil {
					return nil, nil, "", err
				}
				continue
			}
			if tr == nil {
				return nil, nil, "", ErrNotFound // runs of a deleted trigger
			}
			run, err := decodeRun(item)
			if err != nil {
				return tr, nil, "", err // the trigger, for its owner to be judged first
			}
			if !now.Before(run.RecordedAt.Add(RunTTL)) {
				continue // expired: the TTL deletes it soon
			}
			if len(runs) == limit {
				return tr, runs, RunPosition(last), nil
			}
			runs = append(runs, run)
			last = sk.Value
		}
		if len(out.LastEvaluatedKey) == 0 {
			if tr == nil {
				return nil, nil, "", ErrNotFound
			}
			return tr, runs, "", nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
