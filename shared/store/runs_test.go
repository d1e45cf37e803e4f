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
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// TestRunHistory: the advance that writes a slot's session adds its run,
// a refusal recorded after the start adds its own; recording a slot again
// (an older writer's slot, replayed) leaves one run of it; each run's item
// expires 30 days after it was recorded; the run of a session started
// with it is announced, a run recorded on its own is not.
func TestRunHistory(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		seen := createDue(t, tbl)
		recorded := now.Add(30 * time.Second)
		adv := &Advance{Seen: seen, Run: trigger.Run{At: now, Status: trigger.StatusFallback, RecordedAt: recorded}, Next: now.Add(time.Hour)}
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
		_, runs, next, err := tbl.ListRuns(ctx, "trg_a", "", 10, nil, recorded.Add(3*time.Hour))
		want := []trigger.Run{again, {At: now, SessionID: "workspace_a", Status: trigger.StatusFallback, RecordedAt: recorded, Announced: true}}
		if err != nil || next != "" || !reflect.DeepEqual(runs, want) {
			t.Errorf("runs %+v, next %q: %v", runs, next, err)
		}
		item, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "TRIGGER#trg_a"}, "SK": &types.AttributeValueMemberS{Value: "RUN#" + now.Format("2006-01-02T15:04:05.000Z")}}})
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
		tr, page, next, err := counted.ListRuns(rctx, "trg_a", "", 3, nil, at)
		if err != nil || tr.ID != "trg_a" || next == "" || !reflect.DeepEqual(page, want[:3]) || record.Requests() != 1 {
			t.Fatalf("first page: %+v %q %d requests: %v", page, next, record.Requests(), err)
		}
		var got []trigger.Run
		var after RunPosition
		for pages := 0; ; pages++ {
			_, page, next, err := tbl.ListRuns(ctx, "trg_a", after, 3, nil, at)
			if err != nil || pages > 3 {
				t.Fatalf("page %d: %v", pages, err)
			}
			got = append(got, page...)
			if next == "" {
				break
			}
			after = next
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("all pages: %+v", got)
		}
		// 30 days after the third was recorded, the three oldest are gone.
		_, page, _, err = tbl.ListRuns(ctx, "trg_a", "", 10, nil, now.Add(32*24*time.Hour))
		if err != nil || !reflect.DeepEqual(page, want[:4]) {
			t.Errorf("unexpired: %d runs: %v", len(page), err)
		}
		_, _, fourth, err := tbl.ListRuns(ctx, "trg_a", "", 4, nil, at)
		if err != nil || fourth == "" {
			t.Fatalf("the first four: %q: %v", fourth, err)
		}
		_, page, next, err = tbl.ListRuns(ctx, "trg_a", fourth, 10, nil, at)
		if err != nil || next != "" || !reflect.DeepEqual(page, want[4:]) {
			t.Errorf("after the fourth: %+v %q: %v", page, next, err)
		}
		tr, _ = tbl.GetTrigger(ctx, "trg_a")
		if err := tbl.DeleteTrigger(ctx, tr); err != nil {
			t.Fatal(err)
		}
		for _, after := range []RunPosition{"", fourth} {
			if _, _, _, err := tbl.ListRuns(ctx, "trg_a", after, 3, nil, at); !errors.Is(err, ErrNotFound) {
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
		if _, _, _, err := tbl.ListRuns(ctx, "trg_none", "", 3, nil, at); !errors.Is(err, ErrNotFound) {
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
		seen := createDue(t, tbl)
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
		old.Status = ledger.StatusFailed
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: EncodeLedger(old)}); err != nil {
			t.Fatal(err)
		}
		seen, _ := tbl.GetTrigger(ctx, "trg_a")
		stale := *seen
		stale.Version--
		row := newRow("trigger:trg_a:1", "workspace_r", now.Add(24*time.Hour))
		if _, err := tbl.ReplaceLedger(ctx, newRecord("workspace_r"), *row, old, &Advance{Seen: &stale, Run: trigger.Run{At: now, Status: trigger.StatusFired, RecordedAt: now}, Next: now.Add(time.Hour)}); !errors.Is(err, ErrTriggerMoved) {
			t.Fatalf("a stale advance: %v", err)
		}
		if _, err := tbl.GetSession(ctx, "workspace_r"); !errors.Is(err, ErrNotFound) {
			t.Errorf("the session was written: %v", err)
		}
		if _, err := tbl.ReplaceLedger(ctx, newRecord("workspace_r"), *row, old, &Advance{Seen: seen, Run: trigger.Run{At: now, Status: trigger.StatusFired, RecordedAt: now}, Next: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		got, _ := tbl.GetTrigger(ctx, "trg_a")
		if got.LastRun.SessionID != "workspace_r" || !got.NextRunAt.Equal(now.Add(time.Hour)) || got.Version != seen.Version+1 {
			t.Errorf("%+v", got)
		}
		if r, err := tbl.GetLedger(ctx, "u1", "trigger:trg_a:1"); err != nil || r.Status != ledger.StatusCompleted {
			t.Errorf("the row: %+v %v", r, err)
		}
		if _, runs, _, err := tbl.ListRuns(ctx, "trg_a", "", 10, nil, now); err != nil || len(runs) != 1 || runs[0].SessionID != "workspace_r" {
			t.Errorf("runs %+v: %v", runs, err)
		}
	})
}

// TestManualRuns: a start now's session and run are written on the
// condition that the trigger is as it was read, with a key or without,
// and so is a refused one's run; a stale read writes nothing. Runs of one
// second list to the millisecond of their start, newest first, beside the
// slot's run of that second, and a start now's stored run is read back by
// its session, an older writer's whole-second key included.
func TestManualRuns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		seen := createDue(t, tbl)
		stale := *seen
		stale.Version--
		late, early := newRecord("workspace_late"), newRecord("workspace_early")
		late.CreatedAt, early.CreatedAt = now.Add(900*time.Millisecond), now.Add(100*time.Millisecond)
		if err := tbl.PutSession(ctx, early, &ManualRun{Seen: &stale, Run: trigger.Run{Kind: trigger.KindManual, Status: trigger.StatusFired}}); !errors.Is(err, ErrTriggerMoved) {
			t.Errorf("unkeyed, a stale read: %v", err)
		}
		row := newRow("trigger:trg_a:now:k1", "workspace_late", now.Add(24*time.Hour))
		if _, err := tbl.CreateSession(ctx, late, *row, now, &ManualRun{Seen: &stale, Run: trigger.Run{Kind: trigger.KindManual, Status: trigger.StatusFired}}); !errors.Is(err, ErrTriggerMoved) {
			t.Errorf("keyed, a stale read: %v", err)
		}
		failed := trigger.Run{Kind: trigger.KindManual, ID: "run_x", At: now.Add(500 * time.Millisecond), Status: trigger.StatusFailed, Error: "forbidden", RecordedAt: now}
		if err := tbl.PutRun(ctx, &stale, failed); !errors.Is(err, ErrTriggerMoved) {
			t.Errorf("a refusal, a stale read: %v", err)
		}
		for _, id := range []string{"workspace_late", "workspace_early"} {
			if _, err := tbl.GetSession(ctx, id); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s written on a stale read: %v", id, err)
			}
		}
		if _, runs, _, err := tbl.ListRuns(ctx, "trg_a", "", 10, nil, now); err != nil || len(runs) != 0 {
			t.Fatalf("runs written on a stale read: %+v %v", runs, err)
		}

		if err := tbl.PutSession(ctx, early, &ManualRun{Seen: seen, Run: trigger.Run{Kind: trigger.KindManual, Status: trigger.StatusFired}}); err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.CreateSession(ctx, late, *row, now, &ManualRun{Seen: seen, Run: trigger.Run{Kind: trigger.KindManual, Status: trigger.StatusFallback}}); err != nil {
			t.Fatal(err)
		}
		if err := tbl.PutRun(ctx, seen, failed); err != nil {
			t.Fatal(err)
		}
		slot := trigger.Run{At: now, Status: trigger.StatusFired, SessionID: "workspace_slot", RecordedAt: now}
		if err := tbl.RecordRun(ctx, seen, slot, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		_, runs, _, err := tbl.ListRuns(ctx, "trg_a", "", 10, nil, now)
		var order []string
		for _, r := range runs {
			order = append(order, r.SessionID+r.ID)
		}
		if want := []string{"workspace_lateworkspace_late", "run_x", "workspace_earlyworkspace_early", "workspace_slot"}; err != nil || !reflect.DeepEqual(order, want) {
			t.Errorf("runs of one second: %v, want %v: %v", order, want, err)
		}
		got, err := tbl.GetManualRun(ctx, "trg_a", late)
		want := trigger.Run{Kind: trigger.KindManual, Status: trigger.StatusFallback}.ForSession(late)
		want.At, want.RecordedAt = want.At.Truncate(time.Second), want.RecordedAt.Truncate(time.Second) // shown to the second
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("the stored run: %+v, want %+v: %v", got, want, err)
		}
		// An older writer's run, keyed by the second of its start.
		older := newRecord("workspace_older")
		older.CreatedAt = now.Add(2*time.Second + 300*time.Millisecond)
		item := encodeRun("trg_a", trigger.Run{Kind: trigger.KindManual, Status: trigger.StatusFired}.ForSession(older))
		item["SK"] = S("RUN#" + older.CreatedAt.Format(session.TimeFormat) + "#workspace_older")
		item["slot"] = S(older.CreatedAt.Format(session.TimeFormat))
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: item}); err != nil {
			t.Fatal(err)
		}
		if got, err := tbl.GetManualRun(ctx, "trg_a", older); err != nil || got.SessionID != "workspace_older" || got.Status != trigger.StatusFired {
			t.Errorf("an older writer's run: %+v: %v", got, err)
		}
		if _, err := tbl.GetManualRun(ctx, "trg_a", newRecord("workspace_none")); !errors.Is(err, ErrNotFound) {
			t.Errorf("no such run: %v", err)
		}
	})
}
