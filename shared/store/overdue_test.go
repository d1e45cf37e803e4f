package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/outcome"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// started writes a v7 session created at created, with its live entry;
// with run, a trigger's run started it, and the run is written recorded
// at recorded (zero: not written, gone).
func started(t *testing.T, tbl *Table, id string, created time.Time, run *trigger.Run, recorded time.Time) *session.Record {
	t.Helper()
	ctx := context.Background()
	rec := newRecord(id)
	rec.CreatedAt = created
	prompt := "Fix the build."
	rec.Launch = &session.Launch{Prompt: &prompt}
	if run != nil {
		rec.Trigger = startedBy("trg_a", *run)
		if !recorded.IsZero() {
			r := *run
			r.RecordedAt = recorded
			if _, err := tbl.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.name), Item: encodeRun("trg_a", r)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tbl.PutSession(ctx, rec, nil); err != nil {
		t.Fatal(err)
	}
	return rec
}

// overdueAll is every shard's overdue sessions, by id.
func overdueAll(t *testing.T, tbl *Table, before time.Time, limit int) map[string]OverdueSession {
	t.Helper()
	found := map[string]OverdueSession{}
	for shard := range DueShards {
		page, err := tbl.OverdueSessions(context.Background(), shard, before, limit)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page {
			found[s.SessionID] = s
		}
	}
	return found
}

// itemOf is an item read strongly consistently; nil when there is none.
func itemOf(t *testing.T, tbl *Table, k Item) Item {
	t.Helper()
	out, err := tbl.client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(tbl.name), Key: k, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// TestOverdueSessions: a live shard's query finds the sessions silent at
// or before the time, with their entries' nextRunAt and run, the longest
// silent first, at most the limit; never a trigger's due entry.
func TestOverdueSessions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		run := &trigger.Run{At: now, Status: trigger.StatusFired}
		// Two sessions in one shard, and one started after the time.
		ids := sameShard(2)
		started(t, tbl, ids[1], now.Add(time.Minute), nil, time.Time{})
		started(t, tbl, ids[0], now, run, now)
		started(t, tbl, "workspace_later", now.Add(2*time.Hour), nil, time.Time{})
		found := overdueAll(t, tbl, now.Add(time.Minute), 10)
		want := map[string]OverdueSession{
			ids[0]: {SessionID: ids[0], NextRunAt: "2026-11-30T10:00:00Z", TriggerID: "trg_a", Run: "RUN#2026-11-30T10:00:00.000Z"},
			ids[1]: {SessionID: ids[1], NextRunAt: "2026-11-30T10:01:00Z"},
		}
		if !reflect.DeepEqual(found, want) {
			t.Errorf("found %+v, want %+v", found, want)
		}
		page, err := tbl.OverdueSessions(context.Background(), shardNumber(ids[0]), now.Add(time.Minute), 1)
		if err != nil || len(page) != 1 || page[0].SessionID != ids[0] {
			t.Errorf("limit 1: %+v %v", page, err)
		}
	})
}

// sameShard is n session ids in one live shard.
func sameShard(n int) []string {
	byShard := map[int][]string{}
	for i := 0; ; i++ {
		id := fmt.Sprintf("workspace_%d", i)
		s := shardNumber(id)
		if byShard[s] = append(byShard[s], id); len(byShard[s]) == n {
			return byShard[s]
		}
	}
}

// shardNumber is the live shard of a session.
func shardNumber(id string) int {
	for shard := range DueShards {
		if shardKey(liveShardPrefix, shard) == shardOf(liveShardPrefix, id) {
			return shard
		}
	}
	return -1
}

// TestMarkTimedOut: a mark sets the session's outcome (timed_out,
// no_outcome_reported, at the mark's second, revision 1) and deletes its
// live entry; a trigger's run gets the same outcome when it is there and
// not expired, and the session is marked without it otherwise. A session
// with an outcome, or whose entry moved since it was read (a heartbeat),
// is not marked, and nothing is written.
func TestMarkTimedOut(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		at := now.Add(3*time.Hour + 1500*time.Millisecond)
		want := outcome.Marked(0, at)
		run := &trigger.Run{At: now, Status: trigger.StatusFired}
		started(t, tbl, "workspace_plain", now, nil, time.Time{})
		started(t, tbl, "workspace_run", now, run, now)
		started(t, tbl, "workspace_expired", now, &trigger.Run{At: now.Add(-time.Minute), Status: trigger.StatusFired}, now.Add(-RunTTL))
		started(t, tbl, "workspace_gone", now, &trigger.Run{At: now.Add(-2 * time.Minute), Status: trigger.StatusFired}, time.Time{})
		started(t, tbl, "workspace_reported", now, nil, time.Time{})
		started(t, tbl, "workspace_beat", now, nil, time.Time{})
		found := overdueAll(t, tbl, now, 10)

		// A report came first; a heartbeat moved the entry since.
		reported := M(Item{"status": S("completed"), "endedAt": S("2026-11-30T11:00:00Z"), "reportedAt": S("2026-11-30T11:00:00Z"), "revision": N(1)})
		if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(name), Key: SessionKey("workspace_reported"),
			UpdateExpression: aws.String("SET metadata.outcome = :o"), ExpressionAttributeValues: Item{":o": reported}}); err != nil {
			t.Fatal(err)
		}
		stale := found["workspace_beat"]
		stale.NextRunAt = "2026-11-30T09:59:00Z"
		for _, r := range []struct {
			s      OverdueSession
			marked bool
		}{
			{found["workspace_plain"], true}, {found["workspace_run"], true}, {found["workspace_expired"], true},
			{found["workspace_gone"], true}, {found["workspace_reported"], false}, {stale, false},
		} {
			marked, err := tbl.MarkTimedOut(ctx, r.s, at)
			if err != nil || marked != r.marked {
				t.Fatalf("%s: marked %t, %v", r.s.SessionID, marked, err)
			}
			rec, err := tbl.GetSession(ctx, r.s.SessionID)
			live := itemOf(t, tbl, liveKey(r.s.SessionID))
			switch {
			case err != nil:
				t.Fatal(err)
			case r.marked && (!reflect.DeepEqual(rec.Outcome, want) || live != nil):
				t.Errorf("%s: outcome %+v, live entry %v", r.s.SessionID, rec.Outcome, live)
			case !r.marked && (r.s.SessionID == "workspace_beat" && rec.Outcome != nil || rec.Outcome != nil && rec.Outcome.Status == outcome.TimedOut || live == nil):
				t.Errorf("%s marked: outcome %+v, live entry %v", r.s.SessionID, rec.Outcome, live)
			}
		}
		if _, got := readRunOutcome(t, tbl, run); !reflect.DeepEqual(got, want) {
			t.Errorf("the run's outcome %+v", got)
		}
		if item, got := readRunOutcome(t, tbl, &trigger.Run{At: now.Add(-time.Minute)}); item == nil || got != nil {
			t.Errorf("an expired run: %v", item)
		}
		if item, _ := readRunOutcome(t, tbl, &trigger.Run{At: now.Add(-2 * time.Minute)}); item != nil {
			t.Errorf("a gone run was written: %v", item)
		}
		if left := overdueAll(t, tbl, at, 10); !slices.Equal(keysOf(left), []string{"workspace_beat", "workspace_reported"}) {
			t.Errorf("left live: %v", keysOf(left))
		}
	})
}

// readRunOutcome is the item of trg_a's run r (nil: none) and its outcome
// (nil: none).
func readRunOutcome(t *testing.T, tbl *Table, r *trigger.Run) (Item, *outcome.Outcome) {
	t.Helper()
	item := itemOf(t, tbl, runKey("trg_a", *r))
	m, ok := item["outcome"].(*types.AttributeValueMemberM)
	if !ok {
		return item, nil
	}
	var d AttrReader
	return item, decodeOutcome(&d, m.Value, "outcome.")
}

// keysOf is the sorted ids of overdue sessions.
func keysOf(m map[string]OverdueSession) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestMarkAnswer: a mark's transaction refused by a condition on the
// session or its entry, or meeting another transaction (real DynamoDB's
// TransactionConflict, which the emulators never produce), marks nothing
// and is no error; a condition on the run is tried again without it; a
// throttled one is service_unavailable, anything else internal_error.
func TestMarkAnswer(t *testing.T) {
	cancel := func(codes ...string) error {
		var reasons []types.CancellationReason
		for _, c := range codes {
			reasons = append(reasons, types.CancellationReason{Code: aws.String(c)})
		}
		return &types.TransactionCanceledException{CancellationReasons: reasons}
	}
	for _, r := range []struct {
		rule          string
		err           error
		withRun       bool
		marked, again bool
		code          problem.Code
	}{
		{"written", nil, true, true, false, ""},
		{"a report came first", cancel("ConditionalCheckFailed", "None", "None"), true, false, false, ""},
		{"a heartbeat moved the entry", cancel("None", "ConditionalCheckFailed"), false, false, false, ""},
		{"the run is gone", cancel("None", "None", "ConditionalCheckFailed"), true, false, true, ""},
		{"the run is gone and a report came first", cancel("ConditionalCheckFailed", "ConditionalCheckFailed", "ConditionalCheckFailed"), true, false, false, ""},
		{"a conflict on the session", cancel("TransactionConflict", "None", "None"), true, false, false, ""},
		{"a conflict on the run", cancel("None", "None", "TransactionConflict"), true, false, false, ""},
		{"a conflict exception", &types.TransactionConflictException{}, false, false, false, ""},
		{"throttled", cancel("ThrottlingError", "None"), false, false, false, problem.ServiceUnavailable},
		{"a validation error", cancel("ValidationError", "None"), false, false, false, problem.InternalError},
		{"another error", errors.New("no table"), false, false, false, problem.InternalError},
	} {
		marked, again, err := markAnswer(r.err, r.withRun)
		if marked != r.marked || again != r.again || (r.code == "") != (err == nil) || err != nil && problem.CodeOf(err) != r.code {
			t.Errorf("%s: marked %t, again %t, %v", r.rule, marked, again, err)
		}
	}
}
