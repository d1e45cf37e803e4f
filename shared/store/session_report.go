package store

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/outcome"
	"github.com/cloud-agent/control-plane/shared/session"
)

// Errors of a runner's claim or report (contract v7).
var (
	// ErrSessionMoved: the session's claim or outcome changed since it
	// was read: read it again and judge again.
	ErrSessionMoved = errors.New("store: session moved on")
	// ErrRunGone: the session's trigger run is gone (expired, or its
	// trigger deleted): write the session's outcome without it.
	ErrRunGone = errors.New("store: run gone")
)

// ReadLaunch reads a session with what it was started with (Launch: its
// prompt and its environment's snapshot), in one strongly consistent
// query of its partition. ErrNotFound when it has no METADATA; a record
// that does not decode is an *InvalidSessionError.
func (t *Table) ReadLaunch(ctx context.Context, sessionID string) (*session.Record, error) {
	out, err := t.client.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(t.name), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: Item{":pk": S(sessionPrefix + sessionID)},
	})
	if err != nil {
		return nil, failed("read session", err)
	}
	var rec *session.Record
	launch := &session.Launch{}
	for _, item := range out.Items {
		switch sk, _ := item["SK"].(*types.AttributeValueMemberS); {
		case sk == nil:
		case sk.Value == sessionSortKey:
			if rec, err = DecodeSession(item); err != nil {
				return nil, err
			}
		case sk.Value == promptSortKey:
			launch.Prompt, err = decodePrompt(item)
		case sk.Value == snapshotSortKey:
			launch.Environment, err = decodeSnapshot(item)
		}
		if err != nil {
			return nil, &InvalidSessionError{SessionID: sessionID, Reason: err.Error()}
		}
	}
	if rec == nil {
		return nil, ErrNotFound
	}
	rec.Launch = launch
	return rec, nil
}

// seenOutcome is the condition that the session's outcome is as seen:
// none, or the same revision.
func (e *expr) seenOutcome(seen *outcome.Outcome) string {
	if seen == nil {
		return "attribute_not_exists(" + e.name("metadata") + ".outcome)"
	}
	return e.name("metadata") + ".outcome.revision = " + e.value("seenRevision", N(int64(seen.Revision)))
}

// seenClaim is the condition that the session's claim is as seen: none,
// or the same runner's with the same heartbeat.
func (e *expr) seenClaim(seen *outcome.Claim) string {
	md := e.name("metadata")
	if seen == nil {
		return "attribute_not_exists(" + md + ".claim)"
	}
	return md + ".claim.runner = " + e.value("seenRunner", S(seen.Runner)) +
		" AND " + md + ".claim.heartbeatAt = " + e.value("seenBeat", S(formatTime(seen.HeartbeatAt)))
}

// metadataUpdate is the update of seen's METADATA that sets its section
// (claim or outcome) to v, on the condition that its claim and outcome
// are as seen.
func metadataUpdate(table string, seen *session.Record, section string, v types.AttributeValue) types.TransactWriteItem {
	var e expr
	cond := and(e.seenClaim(seen.Claim), e.seenOutcome(seen.Outcome))
	update := "SET " + e.name("metadata") + "." + section + " = " + e.value("section", v)
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(table), Key: SessionKey(seen.SessionID),
		UpdateExpression: &update, ConditionExpression: &cond,
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
	}}
}

// WriteClaim records claim on the session seen, on the condition that its
// claim and outcome are as seen (else ErrSessionMoved); while the session
// has no outcome, its live entry moves to the claim's heartbeat (what
// else the entry holds stays).
func (t *Table) WriteClaim(ctx context.Context, seen *session.Record, claim *outcome.Claim) error {
	items := []types.TransactWriteItem{metadataUpdate(t.name, seen, "claim", encodeClaim(claim))}
	if seen.Outcome == nil {
		var e expr
		update := set(e.assign("nextRunAt", S(formatTime(claim.HeartbeatAt))))
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(t.name), Key: liveKey(seen.SessionID), UpdateExpression: &update,
			ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
		}})
	}
	return sessionWrite("write claim", t.transact(ctx, items))
}

// WriteOutcome records o on the session seen, on the condition that its
// claim and outcome are as seen (else ErrSessionMoved), and deletes its
// live entry; with run, on the session's trigger run too, while the run
// exists and has not expired by now (else ErrRunGone, and nothing is
// written): all in one transaction.
func (t *Table) WriteOutcome(ctx context.Context, seen *session.Record, o *outcome.Outcome, run bool, now time.Time) error {
	v := encodeOutcome(o)
	items := []types.TransactWriteItem{
		metadataUpdate(t.name, seen, "outcome", v),
		{Delete: &types.Delete{TableName: aws.String(t.name), Key: liveKey(seen.SessionID)}},
	}
	if tr := seen.Trigger; run && tr != nil {
		items = append(items, runOutcome(t.name, tr.ID, tr.RunKey, v, now))
	}
	err := t.transact(ctx, items)
	if r := refusalOf(err); r.on(2, condition) && !r.on(0, condition) && !r.on(0, conflict) {
		return ErrRunGone
	}
	return sessionWrite("write outcome", err)
}

// runOutcome sets the outcome v on a trigger's run (its key in the
// trigger's partition), on the condition that the run exists and has not
// expired at at: a report or a mark never recreates a run.
func runOutcome(table, triggerID, runKey string, v types.AttributeValue, at time.Time) types.TransactWriteItem {
	var e expr
	cond := and("attribute_exists(PK)", e.name("expiresAt")+" > "+e.value("at", N(at.Unix())))
	update := set(e.assign("outcome", v))
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(table), Key: key(triggerPrefix+triggerID, runKey),
		UpdateExpression: &update, ConditionExpression: &cond,
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
	}}
}

// sessionWrite maps the answer to a write conditioned on a session as
// seen (its first item): a failed condition or a conflict is
// ErrSessionMoved; anything else a fault.
func sessionWrite(op string, err error) error {
	r := refusalOf(err)
	switch {
	case err == nil:
		return nil
	case r.on(0, condition), r.refusedFrom(0, conflict), r.conflicted:
		return ErrSessionMoved
	}
	return r.fault(op)
}
