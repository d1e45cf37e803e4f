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

// FilteredReads is how many runs a page of a filtered listing reads at
// most, for each run it may hold.
const FilteredReads = 10

// ListRuns returns the trigger and up to limit of its runs that keep
// accepts (nil: all of them), newest first to the millisecond of their
// start, those after the position (""; from the newest), leaving out the
// expired; next is the position to go on from when older ones follow,
// else "". Without keep, a page is full unless it is the last; with it, a
// page reads at most FilteredReads × limit runs, so it may hold fewer,
// even none, and next is then after the last run read. The first page is
// one strongly consistent query, which reads the trigger with its newest
// runs; a later page reads the trigger, then queries. ErrNotFound when
// the trigger does not exist (its runs may outlive it, until they
// expire); an *InvalidTriggerError when it does not decode; with a run
// that does not decode, the trigger and the fault. The position is one
// that Valid accepts.
func (t *Table) ListRuns(ctx context.Context, triggerID string, after RunPosition, limit int, keep func(trigger.Run) bool, now time.Time) (tr *trigger.Trigger, runs []trigger.Run, next RunPosition, err error) {
	pk := triggerPrefix + triggerID
	kc, err := expression.NewBuilder().WithKeyCondition(expression.Key("PK").Equal(expression.Value(pk)).
		And(expression.Key("SK").Between(expression.Value(runPrefix), expression.Value(triggerSortKey)))).Build()
	if err != nil {
		return nil, nil, "", err
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(t.name), ConsistentRead: aws.Bool(true), ScanIndexForward: aws.Bool(false),
		KeyConditionExpression: kc.KeyCondition(), ExpressionAttributeNames: kc.Names(), ExpressionAttributeValues: kc.Values(),
	}
	p := runPage{limit: limit, keep: keep, now: now}
	if after != "" {
		if p.tr, err = t.GetTrigger(ctx, triggerID); err != nil {
			return nil, nil, "", err
		}
		in.ExclusiveStartKey = key(pk, string(after))
	}
	for {
		in.Limit = aws.Int32(p.queryLimit())
		out, err := t.client.Query(ctx, in)
		if err != nil {
			return nil, nil, "", failed("list runs", err)
		}
		if err := p.take(out.Items); err != nil {
			return p.tr, nil, "", err // the trigger, if read, for its owner to be judged first
		}
		switch {
		case p.full:
			return p.tr, p.runs, p.next, nil
		case p.tr == nil:
			return nil, nil, "", ErrNotFound
		case len(out.LastEvaluatedKey) == 0:
			return p.tr, p.runs, "", nil
		case keep != nil && p.read >= FilteredReads*limit:
			return p.tr, p.runs, RunPosition(p.last), nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// runPage is a page of runs as ListRuns reads it: the trigger once its
// item is read, the runs kept, how many runs were read and the key of
// the last; full once a run beyond the page's limit is found, next then
// the position before it.
type runPage struct {
	limit int
	keep  func(trigger.Run) bool
	now   time.Time

	tr   *trigger.Trigger
	runs []trigger.Run
	read int
	last string
	full bool
	next RunPosition
}

// queryLimit is how many items the next query reads: without a filter,
// the page and one to tell whether more follow; with one, what is left
// of the page's reads; and the trigger's item until it is read.
func (p *runPage) queryLimit() int32 {
	n := p.limit + 1
	if p.keep != nil {
		n = FilteredReads*p.limit - p.read
	}
	if p.tr == nil {
		n++
	}
	return int32(n)
}

// take reads a query's items: the trigger's, then runs. A run of a
// trigger not (yet) read is ErrNotFound: runs of a deleted trigger. An
// item that does not decode is its fault.
func (p *runPage) take(items []Item) error {
	for _, item := range items {
		sk, _ := item["SK"].(*types.AttributeValueMemberS)
		if sk != nil && sk.Value == triggerSortKey {
			tr, err := decodeTrigger(item)
			if err != nil {
				return err
			}
			p.tr = tr
			continue
		}
		if p.tr == nil {
			return ErrNotFound
		}
		p.read++
		run, err := decodeRun(item)
		if err != nil {
			return err
		}
		expired := !p.now.Before(run.RecordedAt.Add(RunTTL)) // the TTL deletes it soon
		if !expired && (p.keep == nil || p.keep(run)) {
			if len(p.runs) == p.limit {
				p.full, p.next = true, RunPosition(p.last)
				return nil
			}
			p.runs = append(p.runs, run)
		}
		p.last = sk.Value
	}
	return nil
}
