package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/trigger"
)

// CreateTrigger writes a new trigger, at version 1, and counts it against
// its owner, and against the environment it names, in one transaction:
// when the owner already has limit triggers, nothing is written and the
// error is ErrTriggerLimit; when the environment is gone,
// ErrEnvironmentGone, which goes first.
func (t *Table) CreateTrigger(ctx context.Context, tr *trigger.Trigger, limit int) error {
	first := *tr
	first.Version = 1
	item := encodeTrigger(&first)
	count := expression.Name("triggers")
	upd, err := expression.NewBuilder().
		WithUpdate(expression.Set(count, expression.Plus(expression.IfNotExists(count, expression.Value(0)), expression.Value(1)))).
		WithCondition(expression.AttributeNotExists(count).Or(count.LessThan(expression.Value(limit)))).
		Build()
	if err != nil {
		return err
	}
	items := []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(t.name), Item: item, ConditionExpression: aws.String(sessionIsNew)}},
		{Update: &types.Update{
			TableName: aws.String(t.name), Key: ownerCountKey(tr),
			UpdateExpression: upd.Update(), ConditionExpression: upd.Condition(),
			ExpressionAttributeNames: upd.Names(), ExpressionAttributeValues: upd.Values(),
		}},
	}
	if tr.EnvironmentID != "" {
		items = append(items, t.environmentUse(tr.EnvironmentID, 1))
	}
	_, err = t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	r := refusalOf(err)
	switch {
	case err == nil:
		return nil
	case r.on(0, condition):
		// The id is new and random: only an earlier attempt of this write,
		// whose answer was lost, can have taken it.
		if stored, gerr := t.GetTrigger(ctx, tr.ID); gerr == nil && stored.UserID == tr.UserID && stored.CreatedAt.Equal(tr.CreatedAt) {
			return nil
		}
	case r.on(2, condition):
		return ErrEnvironmentGone
	case r.on(1, condition):
		return ErrTriggerLimit
	}
	return countError("create trigger", err)
}

// environmentUse counts a trigger that starts (delta 1) or stops (-1)
// naming the environment id, on the condition that the environment
// exists: a delete of it, conditioned on no trigger naming it, and a
// trigger's write that names it never both succeed.
func (t *Table) environmentUse(id string, delta int) types.TransactWriteItem {
	var x expr
	n := x.name("triggers")
	update := "SET " + n + " = if_not_exists(" + n + ", " + x.value("zero", N(0)) + ") + " + x.value("delta", N(int64(delta)))
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(t.name), Key: environmentKey(id), UpdateExpression: &update,
		ConditionExpression: aws.String("attribute_exists(PK)"), ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
	}}
}

// countError maps a refused transaction on an owner's trigger count: two
// writes for one owner at once conflict on real DynamoDB, and a throttled
// one may pass later; both are service_unavailable.
func countError(op string, err error) error {
	r := refusalOf(err)
	if r.conflicted || r.refusedFrom(0, conflict) {
		return errBusy(fmt.Errorf("%s: %w", op, err))
	}
	return r.fault(op)
}

// DeleteTrigger deletes a trigger and uncounts it from its owner and the
// environment it names, in one transaction; ErrNotFound when it is
// already gone. An environment that is gone (a hand's delete) is not
// uncounted.
func (t *Table) DeleteTrigger(ctx context.Context, tr *trigger.Trigger) error {
	// A count that was never written (a trigger put in by other means)
	// goes to 0, never below.
	count := expression.Name("triggers")
	upd, err := expression.NewBuilder().
		WithUpdate(expression.Set(count, expression.Minus(expression.IfNotExists(count, expression.Value(1)), expression.Value(1)))).
		Build()
	if err != nil {
		return err
	}
	items := []types.TransactWriteItem{
		{Delete: &types.Delete{TableName: aws.String(t.name), Key: triggerKey(tr.ID), ConditionExpression: aws.String("attribute_exists(PK)")}},
		{Update: &types.Update{
			TableName: aws.String(t.name), Key: ownerCountKey(tr),
			UpdateExpression: upd.Update(), ExpressionAttributeNames: upd.Names(), ExpressionAttributeValues: upd.Values(),
		}},
	}
	if tr.EnvironmentID != "" {
		items = append(items, t.environmentUse(tr.EnvironmentID, -1))
	}
	_, err = t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	r := refusalOf(err)
	switch {
	case err == nil:
		return nil
	case r.on(0, condition):
		return ErrNotFound
	case r.on(2, condition):
		gone := *tr
		gone.EnvironmentID = ""
		return t.DeleteTrigger(ctx, &gone)
	}
	return countError("delete trigger", err)
}

// moved maps the answer to a write conditioned on a trigger as it was
// seen, alone or in a transaction: a failed condition means the trigger
// moved, and so does a conflict (a transaction in flight on it: another
// invocation's advance, a change), on any of the items; a throttled
// transaction is service_unavailable; anything else a fault.
func moved(op string, err error) error {
	r := refusalOf(err)
	switch {
	case err == nil:
		return nil
	case r.conflicted || r.refusedFrom(0, condition, conflict):
		return ErrTriggerMoved
	}
	return r.fault(op)
}

// parkError maps the answer to the stop of a trigger that does not
// decode, a single write conditioned on the trigger's existence only: a
// failed condition means it was deleted since, and there is nothing to
// stop; a conflict (a transaction in flight on it) may pass later.
func parkError(err error) error {
	r := refusalOf(err)
	switch {
	case err == nil, r.on(0, condition):
		return nil
	case r.conflicted:
		return errBusy(fmt.Errorf("park trigger: %w", err))
	}
	return r.fault("park trigger")
}

// UpdateTrigger writes a change of a trigger (changed, the trigger seen
// with the change applied), with its version moved on, on the condition
// that the trigger is still as it was seen (unchangedSince). The due
// index follows its active flag. When the condition fails nothing is
// written and the error is ErrTriggerMoved. A change of the environment
// it names moves its count from one environment to the other in the same
// transaction: ErrEnvironmentGone when the new one is gone (an old one
// gone, by a hand's delete, is not uncounted).
func (t *Table) UpdateTrigger(ctx context.Context, seen, changed *trigger.Trigger) error {
	next := *changed
	next.Version = seen.Version + 1
	item := encodeTrigger(&next)
	var e expr
	cond := e.unchangedSince(seen)
	put := &types.Put{
		TableName: aws.String(t.name), Item: item, ConditionExpression: &cond,
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
	}
	var err error
	if seen.EnvironmentID == changed.EnvironmentID {
		_, err = t.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: put.TableName, Item: put.Item, ConditionExpression: put.ConditionExpression,
			ExpressionAttributeNames: put.ExpressionAttributeNames, ExpressionAttributeValues: put.ExpressionAttributeValues,
		})
	} else if err = t.moveEnvironment(ctx, put, seen.EnvironmentID, changed.EnvironmentID); errors.Is(err, ErrEnvironmentGone) {
		return err
	}
	if err = moved("update trigger", err); err == nil {
		changed.Version = next.Version
	}
	return err
}

// moveEnvironment writes put with the count of a trigger moved from the
// environment from to the environment to ("" for none).
func (t *Table) moveEnvironment(ctx context.Context, put *types.Put, from, to string) error {
	items := []types.TransactWriteItem{{Put: put}}
	if to != "" {
		items = append(items, t.environmentUse(to, 1))
	}
	if from != "" {
		items = append(items, t.environmentUse(from, -1))
	}
	_, err := t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	r := refusalOf(err)
	switch {
	case to != "" && r.on(1, condition):
		return ErrEnvironmentGone
	case from != "" && r.on(len(items)-1, condition):
		return t.moveEnvironment(ctx, put, "", to)
	}
	return err
}

// Park stops a trigger that cannot fire (its item does not decode, or its
// schedule no longer parses: a retry cannot mend either): it becomes
// inactive, leaves the due index, and records the failed run (its Error
// the problem code). It stays listed, and can be deleted, or mended by a
// change.
//
// A trigger that decoded (seen) is parked on the condition that it is
// still as seen (ErrTriggerMoved when it is not: a change may have mended
// it), its version moved on, and run (trigger.Trigger.Parked) goes into
// its history in the same transaction. One that does not decode is
// parked as long as it exists, its version left as it is (the version may
// be what does not decode), with no run in its history: its slot is not
// known.
func (t *Table) Park(ctx context.Context, id string, seen *trigger.Trigger, run trigger.Run) error {
	var e expr
	stop := []string{e.assign("active", Bool(false)), e.assign("lastRunStatus", S(trigger.StatusFailed)), e.assign("lastError", S(run.Error))}
	remove := " REMOVE " + e.name("dueShard")
	if seen == nil {
		update, cond := set(stop...)+remove, "attribute_exists(PK)"
		_, err := t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(t.name), Key: triggerKey(id),
			UpdateExpression: &update, ConditionExpression: &cond,
			ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
		})
		return parkError(err)
	}
	update := set(append(stop, e.assign("lastRunAt", S(formatTime(run.At))), e.assign("lastSessionId", nil), e.nextVersion())...) + remove
	cond := e.unchangedSince(seen)
	_, err := t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: aws.String(t.name), Key: triggerKey(id),
			UpdateExpression: &update, ConditionExpression: &cond,
			ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
		}},
		runPut(t.name, id, run),
	}})
	return moved("park trigger", err)
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
	var e expr
	conds := []string{e.unchangedSince(seen), e.unchanged("sandboxAllocation", S(seen.SavedAllocation))}
	var remove []string
	if seen.SavedAllocation != "" {
		remove = append(remove, e.name("sandboxAllocation"))
	}
	request := e.name("sandboxAllocationRequest")
	if seen.SavedRequest == nil {
		conds = append(conds, "attribute_not_exists("+request+")")
	} else {
		remove = append(remove, request)
		conds = append(conds, "attribute_exists("+request+")")
	}
	update := set(e.nextVersion())
	if len(remove) > 0 {
		update += " REMOVE " + strings.Join(remove, ", ")
	}
	cond := and(conds...)
	_, err := t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(t.name), Key: triggerKey(seen.ID),
		UpdateExpression: &update, ConditionExpression: &cond,
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
	})
	return moved("clear saved allocation", err)
}
