package store

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// runUpdate records what a slot did and the next slot, and moves the
// version on. An unset value is written NULL, which reads back as unset.
func (e *expr) runUpdate(run trigger.Run, next time.Time) string {
	opt := func(v string) types.AttributeValue {
		if v == "" {
			return nil
		}
		return S(v)
	}
	return set(e.assign("nextRunAt", S(formatTime(next))), e.nextVersion(),
		e.assign("lastRunAt", opt(formatTime(run.At))), e.assign("lastSessionId", opt(run.SessionID)),
		e.assign("lastRunStatus", opt(run.Status)), e.assign("lastError", opt(run.Error)))
}

// Advance moves a trigger past a slot whose new session is written with
// it, in the session's own transaction: it records the slot's run (Run,
// with the session: trigger.Run.ForSession) and the next slot, on the
// condition that the trigger is still as it was seen (unchangedSince),
// and adds the run to the trigger's history. When that condition fails
// nothing at all is written, and the error is ErrTriggerMoved.
type Advance struct {
	Seen *trigger.Trigger
	Run  trigger.Run
	Next time.Time
}

// Beside is what a start writes in its new session's transaction: a
// slot's Advance, or a ManualRun. Each says what a refusal of its own
// items means, so that the transaction's mapping knows only the session
// and its row.
type Beside interface {
	// items are its transaction items, for the session rec.
	items(table string, rec *session.Record) []types.TransactWriteItem
	// ran is the trigger and the run that start the session rec.
	ran(rec *session.Record) (triggerID string, run trigger.Run)
	// refused is what the refusal r says of its items, the first of them
	// at index from: nil when none of them was refused.
	refused(r refusal, from int) error
}

func (a *Advance) refused(r refusal, from int) error { return movedFrom(r, from) }

func (a *Advance) ran(rec *session.Record) (string, trigger.Run) {
	return a.Seen.ID, a.Run.ForSession(rec)
}

// movedFrom is the refusal of items conditioned on a trigger as it was
// seen, from index from on: a failed condition or a conflict on any of
// them means the trigger moved (ErrTriggerMoved).
func movedFrom(r refusal, from int) error {
	if r.refusedFrom(from, condition, conflict) {
		return ErrTriggerMoved
	}
	return nil
}

// items are the advance as transaction items, for the session rec: the
// trigger's update, then its run.
func (a *Advance) items(table string, rec *session.Record) []types.TransactWriteItem {
	run := a.Run.ForSession(rec)
	return []types.TransactWriteItem{runUpdateItem(table, a.Seen, run, a.Next), runPut(table, a.Seen.ID, run)}
}

// runUpdateItem is the update that records a run on the trigger seen and
// moves its next slot on, conditioned on the trigger being as seen.
func runUpdateItem(table string, seen *trigger.Trigger, run trigger.Run, next time.Time) types.TransactWriteItem {
	var e expr
	update, cond := e.runUpdate(run, next), e.unchangedSince(seen)
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(table), Key: triggerKey(seen.ID),
		UpdateExpression: &update, ConditionExpression: &cond,
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
	}}
}

// RecordRun records what a trigger's slot did and moves its next run on,
// on the condition that the trigger is still as it was seen
// (unchangedSince): never backward, never onto a deleted or changed
// trigger. The slot's run goes into the trigger's history in the same
// transaction: a slot has one run item, so recording it again (a replay
// of a slot an older writer fired, which recorded no run) adds none; and
// the condition on the trigger's version keeps a slot from being recorded
// twice, so an older writer's whole-second key of the same slot is never
// written beside it. When the condition fails the error is
// ErrTriggerMoved.
func (t *Table) RecordRun(ctx context.Context, seen *trigger.Trigger, run trigger.Run, next time.Time) error {
	_, err := t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		runUpdateItem(t.name, seen, run, next), runPut(t.name, seen.ID, run),
	}})
	return moved("record trigger run", err)
}
