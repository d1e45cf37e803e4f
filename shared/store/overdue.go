package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/outcome"
)

// OverdueSession is a live session (live_item.go) whose last sign of life
// the due index shows at or before a time: its live entry as read.
type OverdueSession struct {
	SessionID string
	// NextRunAt is the entry's nextRunAt as stored: the session's start
	// or its runner's last heartbeat. The mark holds the entry to it.
	NextRunAt string
	// TriggerID and Run are the trigger and the run's sort key of a
	// session that a trigger's run started; "" for another.
	TriggerID, Run string
}

// OverdueSessions is one query of the live shard (0 to DueShards-1) of
// the due index: at most limit sessions whose last sign of life is at or
// before before, the longest silent first. It reads one page, so that
// the sweep's work a minute is bounded; the rest wait for the next
// minute.
func (t *Table) OverdueSessions(ctx context.Context, shard int, before time.Time, limit int) ([]OverdueSession, error) {
	kc, err := expression.NewBuilder().WithKeyCondition(
		expression.Key("dueShard").Equal(expression.Value(shardKey(liveShardPrefix, shard))).
			And(expression.Key("nextRunAt").LessThanEqual(expression.Value(formatTime(before))))).Build()
	if err != nil {
		return nil, err
	}
	out, err := t.client.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(t.name), IndexName: aws.String(dueTriggers), Limit: aws.Int32(int32(limit)),
		KeyConditionExpression: kc.KeyCondition(), ExpressionAttributeNames: kc.Names(), ExpressionAttributeValues: kc.Values(),
	})
	if err != nil {
		return nil, failed("find overdue sessions", err)
	}
	found := make([]OverdueSession, 0, len(out.Items))
	for _, item := range out.Items {
		var r AttrReader
		s := OverdueSession{
			SessionID: strings.TrimPrefix(r.Str(item, "", "PK"), sessionPrefix), NextRunAt: r.Str(item, "", "nextRunAt"),
			TriggerID: r.Str(item, "", "triggerId"), Run: r.Str(item, "", "run"),
		}
		if r.Err() != nil {
			return nil, failed("find overdue sessions", fmt.Errorf("the live entry of %s: %w", s.SessionID, r.Err()))
		}
		found = append(found, s)
	}
	return found, nil
}

// MarkTimedOut marks an overdue session timed_out at at
// (outcome.Marked: revision 1), in one transaction: the session's
// outcome, on the condition that it still has none; the deletion of its
// live entry, on the condition that the entry is as read (a heartbeat
// since moved it); and, for a session a trigger's run started, the run's
// outcome, on the condition that the run still exists and has not
// expired. A session that a report or a heartbeat reached first is not
// marked (false, no error): nothing is written. A run gone is no error:
// the session is marked without it.
func (t *Table) MarkTimedOut(ctx context.Context, s OverdueSession, at time.Time) (bool, error) {
	mark := encodeOutcome(outcome.Marked(0, at))
	for withRun := s.Run != ""; ; withRun = false {
		items := []types.TransactWriteItem{t.markSession(s, mark), t.deleteLive(s)}
		if withRun {
			items = append(items, t.markRun(s, mark, at))
		}
		_, err := t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		marked, again, fault := markAnswer(err, withRun)
		if !again {
			return marked, fault
		}
	}
}

// markAnswer is what the answer err to a mark's transaction comes to:
// marked; not marked, for a failed condition on the session or its live
// entry, or a transaction met (a report or a heartbeat came first: the
// entry, if still due, is swept again a minute later); again without the
// run, for a failed condition on the run (withRun: the transaction's
// third item), gone; or a fault.
func markAnswer(err error, withRun bool) (marked, again bool, fault error) {
	r := refusalOf(err)
	switch {
	case err == nil:
		return true, false, nil
	case r.on(0, condition) || r.on(1, condition) || r.conflicted || r.refusedFrom(0, conflict):
		return false, false, nil
	case withRun && r.on(2, condition):
		return false, true, nil
	}
	return false, false, r.fault("mark a session timed out")
}

// markSession sets the session's outcome to the mark, on the condition
// that the session exists and has no outcome.
func (t *Table) markSession(s OverdueSession, mark types.AttributeValue) types.TransactWriteItem {
	var e expr
	path := e.name("metadata") + "." + e.name("outcome")
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(t.name), Key: SessionKey(s.SessionID),
		UpdateExpression:         aws.String(set(path + " = " + e.value("mark", mark))),
		ConditionExpression:      aws.String(and("attribute_exists(PK)", "attribute_not_exists("+path+")")),
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
	}}
}

// deleteLive deletes the session's live entry, on the condition that its
// nextRunAt is still the one read.
func (t *Table) deleteLive(s OverdueSession) types.TransactWriteItem {
	var e expr
	cond := e.name("nextRunAt") + " = " + e.value("seen", S(s.NextRunAt))
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName: aws.String(t.name), Key: liveKey(s.SessionID), ConditionExpression: &cond,
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
	}}
}

// markRun sets the outcome of the run that started the session to the
// mark (runOutcome).
func (t *Table) markRun(s OverdueSession, mark types.AttributeValue, at time.Time) types.TransactWriteItem {
	return runOutcome(t.name, s.TriggerID, s.Run, mark, at)
}
