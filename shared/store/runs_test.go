package store

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// TestRunHistory: the advance that writes a slot's session adds its run,
// a refusal recorded after the start adds its own; recording a slot again
// (an older writer's slot, replayed) leaves one run of it; each run's item
// expires 30 days after it was recorded.
func TestRunHistory(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		createDue(t, tbl)
		seen, _ := tbl.GetTrigger(ctx, "trg_a")
		recorded := now.Add(30 * time.Second)
		adv := &Advance{Seen: seen, Slot: now, Status: trigger.StatusFallback, Next: now.Add(time.Hour), At: recorded}
		if _, err := tbl.CreateSession(ctx, newRecord("workspace_a"), *newRow("trigger:trg_a:1", "workspace_a", now.Add(24*time.Hour)), now, adv); err != nil {
			t.Fatal(err)
		}
		seen, _ = tbl.GetTrigger(ctx, "trg_a")
		failed := trigger.Run{At: now.Add(time.Hour), Status: trigger.StatusFailed, Error: "invalid_request", RecordedAt: recorded.Add(time.Hour)}
		if err := tbl.RecordRun(ctx, seen, failed, now.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		// The same slot again, on the trigger put back by hand.
		if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(name), Key: triggerKey("trg_a"),
			UpdateExpression:          aws.String("SET nextRunAt = :n"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberS{Value: formatTime(failed.At)}}}); err != nil {
			t.Fatal(err)
		}
		seen, _ = tbl.GetTrigger(ctx, "trg_a")
		again := trigger.Run{At: failed.At, Status: trigger.StatusFired, SessionID: "workspace_b", RecordedAt: recorded.Add(2 * time.Hour)}
		if err := tbl.RecordRun(ctx, seen, again, now.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		_, runs, more, err := tbl.ListRuns(ctx, "trg_a", trigger.Run{}, 10, recorded.Add(3*time.Hour))
		want := []trigger.Run{again, {At: now, SessionID: "workspace_a", Status: trigger.StatusFallback, RecordedAt: recorded}}
		if err != nil || more || !reflect.DeepEqual(runs, want) {
			t.Errorf("runs %+v, more %t: %v", runs, more, err)
		}
		item, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "TRIGGER#trg_a"}, "SK": &types.AttributeValueMemberS{Value: "RUN#" + now.Format(time.RFC3339)}}})
		if err != nil {
			t.Fatal(err)
		}
		exp, _ := item.Item["expiresAt"].(*types.AttributeValueMemberN)
		if exp == nil || exp.Value != strconv.FormatInt(recorded.Add(30*24*time.Hour).Unix(), 10) {
			t.Errorf("expiresAt %v", item.Item["expiresAt"])
		}
		if _, ok := item.Item["ownerUserId"]; ok {
			t.Error("a run carries the owner: it would be listed among the triggers")
		}
	})
}

// TestListRuns: newest slot first, a page at a time; the first page is one
// query (the trigger with its newest runs); expired runs are gone; the
// runs of a deleted trigger are not shown.
func TestListRuns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		createDue(t, tbl)
		var want []trigger.Run
		for i := range 7 {
			seen, _ := tbl.GetTrigger(ctx, "trg_a")
			run := trigger.Run{At: now.Add(time.Duration(i) * time.Hour), Status: trigger.StatusFailed, Error: "forbidden",
				RecordedAt: now.Add(time.Duration(i) * 24 * time.Hour)}
			if err := tbl.RecordRun(ctx, seen, run, run.At.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			want = append([]trigger.Run{run}, want...)
		}
		counted := New(dynamodb.New(c.Options(), Counting), name)
		rctx, record := invocation.With(ctx)
		at := now.Add(7 * 24 * time.Hour)
		tr, page, more, err := counted.ListRuns(rctx, "trg_a", trigger.Run{}, 3, at)
		if err != nil || tr.ID != "trg_a" || !more || !reflect.DeepEqual(page, want[:3]) || record.Requests() != 1 {
			t.Fatalf("first page: %+v %t %d requests: %v", page, more, record.Requests(), err)
		}
		var got []trigger.Run
		after := trigger.Run{}
		for pages := 0; ; pages++ {
			_, page, more, err := tbl.ListRuns(ctx, "trg_a", after, 3, at)
			if err != nil || pages > 3 {
				t.Fatalf("page %d: %v", pages, err)
			}
			got = append(got, page...)
			if !more {
				break
			}
			after = page[len(page)-1]
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("all pages: %+v", got)
		}
		// 30 days after the third was recorded, the three oldest are gone.
		_, page, _, err = tbl.ListRuns(ctx, "trg_a", trigger.Run{}, 10, now.Add(32*24*time.Hour))
		if err != nil || !reflect.DeepEqual(page, want[:4]) {
			t.Errorf("unexpired: %d runs: %v", len(page), err)
		}
		_, page, more, err = tbl.ListRuns(ctx, "trg_a", want[3], 10, at)
		if err != nil || more || !reflect.DeepEqual(page, want[4:]) {
			t.Errorf("after the fourth: %+v %t: %v", page, more, err)
		}
		tr, _ = tbl.GetTrigger(ctx, "trg_a")
		if err := tbl.DeleteTrigger(ctx, tr); err != nil {
			t.Fatal(err)
		}
		for _, after := range []trigger.Run{{}, want[2]} {
			if _, _, _, err := tbl.ListRuns(ctx, "trg_a", after, 3, at); !errors.Is(err, ErrNotFound) {
				t.Errorf("a deleted trigger's runs after %v: %v", after, err)
			}
		}
		// Deleting the trigger leaves its runs to expire.
		left, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true),
			KeyConditionExpression:    aws.String("PK = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "TRIGGER#trg_a"}}})
		if err != nil || len(left.Items) != len(want) {
			t.Errorf("%d runs left after the delete, want %d: %v", len(left.Items), len(want), err)
		}
		if _, _, _, err := tbl.ListRuns(ctx, "trg_none", trigger.Run{}, 3, at); !errors.Is(err, ErrNotFound) {
			t.Errorf("no such trigger: %v", err)
		}
	})
}

// TestUpdateTrigger: a change is written whole with its version moved on,
// on the condition that the trigger is as it was read; pausing takes it
// out of the due index and resuming puts it back.
func TestUpdateTrigger(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		createDue(t, tbl)
		seen, _ := tbl.GetTrigger(ctx, "trg_a")
		paused := *seen
		paused.Active, paused.Prompt = false, "Pause."
		if err := tbl.UpdateTrigger(ctx, seen, &paused); err != nil {
			t.Fatal(err)
		}
		got, _ := tbl.GetTrigger(ctx, "trg_a")
		if got.Active || got.Prompt != "Pause." || got.Version != seen.Version+1 || paused.Version != got.Version {
			t.Errorf("%+v", got)
		}
		if due, err := tbl.DueTriggers(ctx, now); err != nil || len(due) != 0 {
			t.Errorf("a paused trigger is due: %v %v", due, err)
		}
		if err := tbl.UpdateTrigger(ctx, seen, &paused); !errors.Is(err, ErrTriggerMoved) {
			t.Errorf("a stale read: %v", err)
		}
		resumed := *got
		resumed.Active = true
		if err := tbl.UpdateTrigger(ctx, got, &resumed); err != nil {
			t.Fatal(err)
		}
		if due, err := tbl.DueTriggers(ctx, now); err != nil || len(due) != 1 || due[0].Trigger.Version != got.Version+1 {
			t.Errorf("resumed: %v %v", due, err)
		}
		gone := resumed
		gone.ID = "trg_gone"
		if err := tbl.UpdateTrigger(ctx, &gone, &gone); !errors.Is(err, ErrTriggerMoved) {
			t.Errorf("no such trigger: %v", err)
		}
		if _, err := tbl.GetTrigger(ctx, "trg_gone"); !errors.Is(err, ErrNotFound) {
			t.Errorf("written: %v", err)
		}
	})
}

// TestReplaceLedgerAdvance: a failed row started afresh with a trigger's
// advance writes the session, the row, the advance and the slot's run
// together; with a stale advance, nothing at all.
func TestReplaceLedgerAdvance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		createDue(t, tbl)
		old := newRow("trigger:trg_a:1", "workspace_r", now.Add(24*time.Hour))
		old.Status = session.StatusFailed
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: session.EncodeLedger(old)}); err != nil {
			t.Fatal(err)
		}
		seen, _ := tbl.GetTrigger(ctx, "trg_a")
		stale := *seen
		stale.Version--
		row := newRow("trigger:trg_a:1", "workspace_r", now.Add(24*time.Hour))
		if _, err := tbl.ReplaceLedger(ctx, newRecord("workspace_r"), *row, old, &Advance{Seen: &stale, Slot: now, Status: trigger.StatusFired, Next: now.Add(time.Hour), At: now}); !errors.Is(err, ErrTriggerMoved) {
			t.Fatalf("a stale advance: %v", err)
		}
		if _, err := tbl.GetSession(ctx, "workspace_r"); !errors.Is(err, ErrNotFound) {
			t.Errorf("the session was written: %v", err)
		}
		if _, err := tbl.ReplaceLedger(ctx, newRecord("workspace_r"), *row, old, &Advance{Seen: seen, Slot: now, Status: trigger.StatusFired, Next: now.Add(time.Hour), At: now}); err != nil {
			t.Fatal(err)
		}
		got, _ := tbl.GetTrigger(ctx, "trg_a")
		if got.LastRun.SessionID != "workspace_r" || !got.NextRunAt.Equal(now.Add(time.Hour)) || got.Version != seen.Version+1 {
			t.Errorf("%+v", got)
		}
		if r, err := tbl.GetLedger(ctx, "u1", "trigger:trg_a:1"); err != nil || r.Status != session.StatusCompleted {
			t.Errorf("the row: %+v %v", r, err)
		}
		if _, runs, _, err := tbl.ListRuns(ctx, "trg_a", trigger.Run{}, 10, now); err != nil || len(runs) != 1 || runs[0].SessionID != "workspace_r" {
			t.Errorf("runs %+v: %v", runs, err)
		}
	})
}
