package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/environment"
)

// Errors of an environment's write.
var (
	// ErrEnvironmentMoved: the environment, or its owner's default, is
	// not as it was read: read them again and judge again.
	ErrEnvironmentMoved = errors.New("store: environment moved on")
	// ErrEnvironmentNameTaken: another environment of the owner has the
	// name, without regard to case.
	ErrEnvironmentNameTaken = errors.New("store: environment name taken")
	// ErrEnvironmentLimit: the owner already has the most environments.
	ErrEnvironmentLimit = errors.New("store: environment limit reached")
	// ErrEnvironmentInUse: triggers name the environment.
	ErrEnvironmentInUse = errors.New("store: environment in use")
)

// EnvironmentChange is one change of an owner's environments, decided on
// what was read: a create (Seen nil), a change (both), or a delete (Next
// nil). WasDefault says the environment was its owner's default when
// read, IsDefault that it is after the change.
type EnvironmentChange struct {
	Seen, Next            *environment.Environment
	WasDefault, IsDefault bool
	// Limit is a create's: the most environments an owner keeps.
	Limit int
}

// envAction is one action of an environment's write, with the error its
// refused condition means.
type envAction struct {
	item    types.TransactWriteItem
	refusal error
}

// WriteEnvironment writes the change in one transaction: the
// environment's item (a create on its key being new; a change or a
// delete on the environment being as read), the claim of its name
// (ErrEnvironmentNameTaken when another holds it), its owner's count
// (ErrEnvironmentLimit at a create past Limit), and the owner's default
// pointer: a copy of the default's content written with every change of
// it, removed with the default, and checked not to be the environment
// when it is no default, so that the pointer and the environment never
// disagree. A delete needs no trigger to name the environment
// (ErrEnvironmentInUse). The environment or the pointer found otherwise
// is ErrEnvironmentMoved (so is a conflict with another transaction);
// a delete of an environment gone is ErrNotFound. A change that changes
// nothing writes nothing.
func (t *Table) WriteEnvironment(ctx context.Context, c EnvironmentChange) error {
	actions, err := t.environmentActions(c)
	if err != nil || len(actions) == 0 {
		return err
	}
	items := make([]types.TransactWriteItem, len(actions))
	for i, a := range actions {
		items[i] = a.item
	}
	_, err = t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	r := refusalOf(err)
	switch {
	case err == nil:
		return nil
	case r.conflicted || r.refusedFrom(0, conflict):
		return ErrEnvironmentMoved
	}
	for i, a := range actions {
		if !r.on(i, condition) {
			continue
		}
		switch {
		case i > 0:
			return a.refusal
		case c.Next == nil: // the delete: gone, or in use
			if len(r.old[0]) == 0 {
				return ErrNotFound
			}
			return ErrEnvironmentInUse
		case c.Seen == nil:
			// The id is new and random: only an earlier attempt of this
			// write, whose answer was lost, can have taken it.
			if stored, gerr := t.GetEnvironment(ctx, c.Next.ID); gerr == nil && stored.OwnerUserID == c.Next.OwnerUserID && stored.CreatedAt.Equal(c.Next.CreatedAt) {
				return nil
			}
		}
		return a.refusal
	}
	return r.fault("write environment")
}

// environmentActions are the change's actions, the environment's first.
func (t *Table) environmentActions(c EnvironmentChange) ([]envAction, error) {
	e := c.Next
	if e == nil {
		e = c.Seen
	}
	content := c.Seen == nil || c.Next == nil || environment.Changed(c.Seen, c.Next)
	var actions []envAction
	add := func(item types.TransactWriteItem, refusal error) { actions = append(actions, envAction{item, refusal}) }
	switch {
	case c.Seen == nil:
		item, err := encodeEnvironment(e)
		if err != nil {
			return nil, err
		}
		add(types.TransactWriteItem{Put: &types.Put{TableName: &t.name, Item: item, ConditionExpression: aws.String(sessionIsNew)}}, ErrEnvironmentMoved)
	case c.Next == nil:
		var x expr
		none := x.unchanged("triggers", nil)
		cond := and("attribute_exists(PK)", "("+none+" OR "+x.name("triggers")+" = "+x.value("zero", N(0))+")")
		add(types.TransactWriteItem{Delete: &types.Delete{
			TableName: &t.name, Key: environmentKey(e.ID), ConditionExpression: &cond,
			ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}, nil)
	case content:
		item, err := encodeEnvironment(e)
		if err != nil {
			return nil, err
		}
		var x expr
		cond := x.unchangedEnvironment(c.Seen)
		add(types.TransactWriteItem{Put: &types.Put{
			TableName: &t.name, Item: item, ConditionExpression: &cond,
			ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		}}, ErrEnvironmentMoved)
	case c.IsDefault && !c.WasDefault: // its content is copied: it must be as read
		var x expr
		cond := x.unchangedEnvironment(c.Seen)
		add(types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: &t.name, Key: environmentKey(e.ID), ConditionExpression: &cond,
			ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		}}, ErrEnvironmentMoved)
	}
	for _, a := range t.nameActions(c) {
		add(a, ErrEnvironmentNameTaken)
	}
	if count, ok := t.envCountAction(c); ok {
		add(count, ErrEnvironmentLimit)
	}
	pointer, ok, err := t.pointerAction(c, e, content)
	if err != nil {
		return nil, err
	}
	if ok {
		add(pointer, ErrEnvironmentMoved)
	}
	return actions, nil
}

// unchangedEnvironment is the condition that an environment is as read:
// there, at the same version (none, for an imported item without one) and
// with the same count of triggers (a trigger's write moves the count,
// which a Put would overwrite).
func (x *expr) unchangedEnvironment(e *environment.Environment) string {
	var triggers, version types.AttributeValue
	if e.Triggers != 0 {
		triggers = N(int64(e.Triggers))
	}
	if e.Version != 0 { // an imported item may have none
		version = N(int64(e.Version))
	}
	return and("attribute_exists(PK)", x.unchanged("version", version), x.unchanged("triggers", triggers))
}

// nameActions move the claim of the environment's name: a create claims
// it, a delete releases it, a change that renames it (without regard to
// case) does both. A claim is made where none stands; a release is
// unconditional (an item written by other means may have none).
func (t *Table) nameActions(c EnvironmentChange) []types.TransactWriteItem {
	var out []types.TransactWriteItem
	if c.Seen != nil && (c.Next == nil || environment.FoldName(c.Seen.Name) != environment.FoldName(c.Next.Name)) {
		out = append(out, types.TransactWriteItem{Delete: &types.Delete{TableName: &t.name, Key: nameKey(c.Seen)}})
	}
	if c.Next != nil && (c.Seen == nil || environment.FoldName(c.Seen.Name) != environment.FoldName(c.Next.Name)) {
		claim := nameKey(c.Next)
		claim["environmentId"] = S(c.Next.ID)
		out = append(out, types.TransactWriteItem{Put: &types.Put{TableName: &t.name, Item: claim, ConditionExpression: aws.String(sessionIsNew)}})
	}
	return out
}

// envCountAction counts a created environment against its owner, on the
// condition that the owner has fewer than Limit, or uncounts a deleted
// one (never below 0: a count never written goes to 0).
func (t *Table) envCountAction(c EnvironmentChange) (types.TransactWriteItem, bool) {
	var x expr
	n := x.name("environments")
	switch {
	case c.Seen == nil:
		update := "SET " + n + " = if_not_exists(" + n + ", " + x.value("zero", N(0)) + ") + " + x.value("one", N(1))
		cond := "attribute_not_exists(" + n + ") OR " + n + " < " + x.value("limit", N(int64(c.Limit)))
		return types.TransactWriteItem{Update: &types.Update{
			TableName: &t.name, Key: envCountKey(c.Next), UpdateExpression: &update, ConditionExpression: &cond,
			ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		}}, true
	case c.Next == nil:
		update := "SET " + n + " = if_not_exists(" + n + ", " + x.value("one", N(1)) + ") - " + x.value("one", N(1))
		return types.TransactWriteItem{Update: &types.Update{
			TableName: &t.name, Key: envCountKey(c.Seen), UpdateExpression: &update,
			ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		}}, true
	}
	return types.TransactWriteItem{}, false
}

// pointerAction keeps the owner's default pointer: a copy of the
// environment put when it becomes the default, or when its content changes
// while it is (then on the condition that it still is); removed when it
// stops being the default, or is deleted, on the condition that it still
// is; and, when it is no default and its content changes, a check that
// it has not become one since it was read (whose copy would be stale).
func (t *Table) pointerAction(c EnvironmentChange, e *environment.Environment, content bool) (types.TransactWriteItem, bool, error) {
	var x expr
	is := x.name("environmentId") + " = " + x.value("id", S(e.ID))
	key := defaultKey(e.OwnerUserID, e.OrgID)
	switch {
	case c.Next != nil && c.IsDefault && (content || !c.WasDefault):
		item, err := encodeDefault(e)
		if err != nil {
			return types.TransactWriteItem{}, false, err
		}
		put := &types.Put{TableName: &t.name, Item: item}
		if c.WasDefault {
			put.ConditionExpression, put.ExpressionAttributeNames, put.ExpressionAttributeValues = &is, x.names, x.values
		}
		return types.TransactWriteItem{Put: put}, true, nil
	case c.WasDefault && (c.Next == nil || !c.IsDefault):
		return types.TransactWriteItem{Delete: &types.Delete{
			TableName: &t.name, Key: key, ConditionExpression: &is,
			ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		}}, true, nil
	case !c.WasDefault && c.Seen != nil && content:
		not := fmt.Sprintf("attribute_not_exists(PK) OR NOT (%s)", is)
		return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: &t.name, Key: key, ConditionExpression: &not,
			ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		}}, true, nil
	}
	return types.TransactWriteItem{}, false, nil
}
