package store

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// Due is a trigger the due index shows due: its id, and the trigger as
// the index has it (nil when that copy does not decode). The index is
// eventually consistent: judge the copy only by writes conditioned on it
// (unchangedSince), or read the trigger again.
type Due struct {
	ID      string
	Trigger *trigger.Trigger
	// Environments are what the firing read for the starts of the due
	// triggers it was found with (nil: nothing).
	Environments *environment.Found
}

// DueShards is how many shards the due index has: a share of them names
// each by its number, 0 to DueShards-1.
const DueShards = dueShards

// DueTriggers returns the active triggers of the given shards (none: every
// shard) whose next run is at or before at, as the due index has them,
// longest due first (EachDue, gathered).
func (t *Table) DueTriggers(ctx context.Context, at time.Time, shards ...int) ([]Due, error) {
	var due []Due
	err := t.EachDue(ctx, at, shards, func(found []Due) { due = append(due, found...) })
	if err != nil {
		return nil, err
	}
	SortDue(due)
	return due, nil
}

// EachDue queries the given shards (none: every shard) in parallel, each
// page by page, for the active triggers whose next run is at or before
// at, and hands each shard's to found as its query ends, in the index's
// order, one shard at a time (SortDue orders what is gathered). It
// returns once every query has ended, with the faults of those that
// failed. Each shard must be from 0 to DueShards-1.
func (t *Table) EachDue(ctx context.Context, at time.Time, shards []int, found func([]Due)) error {
	if len(shards) == 0 {
		shards = make([]int, dueShards)
		for i := range shards {
			shards[i] = i
		}
	}
	var mu sync.Mutex
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, shard := range shards {
		wg.Go(func() {
			var due []Due
			if due, errs[i] = t.dueInShard(ctx, shard, at); len(due) > 0 {
				mu.Lock()
				defer mu.Unlock()
				found(due)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// SortDue puts due triggers in the order the firing takes them: longest
// due first, a copy that does not decode before any other.
func SortDue(due []Due) {
	slices.SortStableFunc(due, func(a, b Due) int { return a.nextRunAt().Compare(b.nextRunAt()) })
}

// nextRunAt is the next run the index shows; zero for a copy that does
// not decode, which then comes first, to be read again and judged early.
func (d Due) nextRunAt() time.Time {
	if d.Trigger == nil {
		return time.Time{}
	}
	return d.Trigger.NextRunAt
}

// dueInShard is one shard's due triggers, in the order of their next run.
func (t *Table) dueInShard(ctx context.Context, shard int, at time.Time) ([]Due, error) {
	kc, err := expression.NewBuilder().WithKeyCondition(
		expression.Key("dueShard").Equal(expression.Value(shardKey(dueShardPrefix, shard))).
			And(expression.Key("nextRunAt").LessThanEqual(expression.Value(formatTime(at))))).Build()
	if err != nil {
		return nil, err
	}
	p := dynamodb.NewQueryPaginator(t.client, &dynamodb.QueryInput{
		TableName: aws.String(t.name), IndexName: aws.String(dueTriggers),
		KeyConditionExpression: kc.KeyCondition(), ExpressionAttributeNames: kc.Names(), ExpressionAttributeValues: kc.Values(),
	})
	var due []Due
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, failed("find due triggers", err)
		}
		for _, item := range out.Items {
			tr, err := decodeTrigger(item)
			var invalid *InvalidTriggerError
			switch {
			case errors.As(err, &invalid):
				due = append(due, Due{ID: invalid.ID})
			case err == nil:
				due = append(due, Due{ID: tr.ID, Trigger: tr})
			}
		}
	}
	return due, nil
}
