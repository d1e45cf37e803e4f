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

	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// RunTTL is how long a trigger's run is kept: the table's TTL deletes it
// once its expiresAt has passed, and until then it is read as gone.
const RunTTL = 30 * 24 * time.Hour

// encodeRun returns a run's item, in its trigger's partition (runKey): a
// slot of one trigger, what it did (triggerId, slot,
// status, sessionId?, error?, recordedAt) and when the table's TTL deletes it (expiresAt, N,
// epoch seconds); a manual or webhook run's also its kind (kind, S) and
// id (runId, S), and a webhook run's delivery?, event?, prompt (S, its
// excerpt) and promptLength (N); a run whose session was announced
// (contract v7) announced (BOOL, true), the mark that its session's
// outcome is reported on it (outcome, M, encodeOutcome: written by the
// report, never here).
func encodeRun(triggerID string, run trigger.Run) Item {
	item := runKey(triggerID, run)
	item["triggerId"] = S(triggerID)
	if run.Kind == trigger.KindManual || run.Kind == trigger.KindWebhook {
		item["kind"] = S(run.Kind)
		item["runId"] = S(run.ID)
	}
	if run.Kind == trigger.KindWebhook {
		PutS(item, "delivery", run.Delivery)
		PutS(item, "event", run.Event)
		item["prompt"] = S(run.Prompt)
		item["promptLength"] = N(int64(run.PromptLength))
	}
	item["slot"] = S(formatTime(run.At))
	item["status"] = S(run.Status)
	PutS(item, "sessionId", run.SessionID)
	PutS(item, "error", run.Error)
	item["recordedAt"] = S(formatTime(run.RecordedAt))
	if run.Announced {
		item["announced"] = Bool(true)
	}
	item["expiresAt"] = N(run.RecordedAt.Add(RunTTL).Unix())
	return item
}

// runPut is the transaction item that records a run of a trigger. A slot
// has one run: the write that records it is the one that moves the
// trigger past the slot, on its condition.
func runPut(table, triggerID string, run trigger.Run) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: encodeRun(triggerID, run)}}
}

// decodeRun reads a run's item; a run that does not decode is a fault
// that names the run's slot and the attribute, never its value.
func decodeRun(item Item) (trigger.Run, error) {
	var r AttrReader
	sk := r.Str(item, "", "SK")
	r.Str(item, "", "PK")
	r.Str(item, "", "triggerId")
	run := trigger.Run{
		Kind: r.Str(item, "", "kind"), ID: r.Str(item, "", "runId"),
		At: r.Time(item, "", "slot", session.TimeFormat), Status: r.Str(item, "", "status"),
		SessionID: r.Str(item, "", "sessionId"), Error: r.Str(item, "", "error"),
		RecordedAt: r.Time(item, "", "recordedAt", session.TimeFormat),
		Delivery:   r.Str(item, "", "delivery"), Event: r.Str(item, "", "event"),
		Prompt: r.Str(item, "", "prompt"), PromptLength: int(r.Int(item, "", "promptLength")),
		Announced: r.Bool(item, "", "announced"),
	}
	if o, ok := r.Map(item, "", "outcome"); ok {
		run.Outcome = decodeOutcome(&r, o, "outcome.")
	}
	r.EpochSeconds(item, "", "expiresAt")
	switch run.Kind {
	case "", trigger.KindScheduled: // a slot's: its kind is not written
	case trigger.KindManual, trigger.KindWebhook:
		if run.ID == "" {
			r.Fail("a %s run's runId is missing", run.Kind)
		}
	default:
		r.Fail("kind is not scheduled, manual or webhook")
	}
	if run.At.IsZero() || run.RecordedAt.IsZero() {
		r.Fail("slot or recordedAt is missing")
	}
	if r.Err() != nil {
		return trigger.Run{}, failed("list runs", fmt.Errorf("run %s: %w", strings.TrimPrefix(sk, runPrefix), r.Err()))
	}
	return run, nil
}

// ManualRun is the run of a trigger started now (Run, a manual one, with
// the session: trigger.Run.ForSession), written in its new session's
// transaction on the condition that the trigger is still as it was seen
// (unchangedSince). When the trigger moved, nothing is written and the
// error is ErrTriggerMoved.
type ManualRun struct {
	Seen *trigger.Trigger
	Run  trigger.Run
}

func (m *ManualRun) items(table string, rec *session.Record) []types.TransactWriteItem {
	return []types.TransactWriteItem{seenCheck(table, m.Seen), runPut(table, m.Seen.ID, m.Run.ForSession(rec))}
}

func (m *ManualRun) refused(r refusal, from int) error { return movedFrom(r, from) }

func (m *ManualRun) ran(rec *session.Record) (string, trigger.Run) {
	return m.Seen.ID, m.Run.ForSession(rec)
}

// seenCheck is the transaction item that holds a write to the trigger as
// it was seen (unchangedSince), writing nothing to it.
func seenCheck(table string, seen *trigger.Trigger) types.TransactWriteItem {
	var e expr
	cond := e.unchangedSince(seen)
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: aws.String(table), Key: triggerKey(seen.ID), ConditionExpression: &cond,
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
	}}
}

// PutRun records a run of a trigger on its own (a manual run whose start
// was refused), on the condition that the trigger is still as it was seen:
// ErrTriggerMoved when it is not.
func (t *Table) PutRun(ctx context.Context, seen *trigger.Trigger, run trigger.Run) error {
	_, err := t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{seenCheck(t.name, seen), runPut(t.name, seen.ID, run)},
	})
	return moved("put trigger run", err)
}

// GetManualRun reads the manual run of a trigger's start now that
// obtained the session rec, as it was stored: its key is the session's
// creation and id (an older writer's keeps the creation's second only,
// which the query's prefix also finds). ErrNotFound when there is none.
func (t *Table) GetManualRun(ctx context.Context, triggerID string, rec *session.Record) (trigger.Run, error) {
	kc, err := expression.NewBuilder().WithKeyCondition(expression.Key("PK").Equal(expression.Value(triggerPrefix + triggerID)).
		And(expression.Key("SK").BeginsWith(runPrefix + rec.CreatedAt.UTC().Format("2006-01-02T15:04:05")))).Build()
	if err != nil {
		return trigger.Run{}, err
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(t.name), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: kc.KeyCondition(), ExpressionAttributeNames: kc.Names(), ExpressionAttributeValues: kc.Values(),
	}
	for {
		out, err := t.client.Query(ctx, in)
		if err != nil {
			return trigger.Run{}, failed("get manual run", err)
		}
		for _, item := range out.Items {
			if id, _ := item["runId"].(*types.AttributeValueMemberS); id != nil && id.Value == rec.SessionID {
				return decodeRun(item)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return trigger.Run{}, ErrNotFound
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
