package firing_test

import (
	"context"
	"encoding/json/v2"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/settings"
)

// TestMain serves the burst's fault proxy or endpoint in the process the
// benchmark starts for it, and runs the tests in any other.
func TestMain(m *testing.M) {
	faultproxy.Serve()
	dynamotest.Main(m)
}

var (
	owner = map[string]string{"sub": "u1", "org_ids": "[o1]", "bot_id": "b1"}
	// Monday 2026-11-30 10:00:30 UTC: triggers are created then.
	created = time.Date(2026, 11, 30, 10, 0, 30, 0, time.UTC)
)

// setup is the API and the firing over a fresh table, with the clock at
// created.
func setup(t *testing.T, h *apitest.Harness) *apitest.Harness {
	h.Triggers.Now = func() time.Time { return created }
	return h
}

// newTrigger creates a trigger through the API and returns its id.
func newTrigger(t *testing.T, h *apitest.Harness, cron string, set map[string]any) string {
	t.Helper()
	b := apitest.Body(map[string]any{
		"orgId":      "o1",
		"schedule":   map[string]any{"cron": cron},
		"repository": map[string]any{"type": "github", "repo": "acme/app"},
		"agent":      map[string]any{"mode": "code", "model": "anthropic/claude"},
		"prompt":     "Triage new issues.",
	}, set)
	return h.CreateTrigger(t, owner, b)
}

func read(t *testing.T, h *apitest.Harness, id string) map[string]any {
	t.Helper()
	r := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: owner})
	if r.Status != 200 {
		t.Fatalf("read: %d %s", r.Status, r.Raw)
	}
	return r.Body
}

// fire invokes the firing with a Scheduled Event of time at, the clock at
// clock.
func fire(t *testing.T, h *apitest.Harness, at, clock time.Time) (firing.Summary, error) {
	t.Helper()
	h.Firing.Now = func() time.Time { return clock }
	sum, err := h.Firing.Handle(context.Background(), events.EventBridgeEvent{Source: "aws.events", DetailType: "Scheduled Event", Time: at})
	if sum.Due != sum.Fired+sum.Duplicates+sum.Failed {
		t.Errorf("due %d is not fired + duplicates + failed: %+v", sum.Due, sum)
	}
	return sum, err
}

func lookup(t *testing.T, h *apitest.Harness, id string) map[string]any {
	t.Helper()
	r := h.Do(apitest.Call{Method: "GET", Path: "/v1/sessions/" + id + "/allocation", Claims: owner})
	if r.Status != 200 {
		t.Fatalf("lookup %s: %d %s", id, r.Status, r.Raw)
	}
	return r.Body
}

// TestFireOnce: a due trigger starts one session, for its user and org
// (not its bot), created on the scheduled platform, under the operation
// key of its slot; the trigger records the run and moves to its next slot;
// the same event again starts nothing.
func TestFireOnce(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	id := newTrigger(t, h, "*/5 * * * *", nil)
	idle := newTrigger(t, h, "*/5 * * * *", map[string]any{"active": false})
	later := newTrigger(t, h, "0 12 * * *", nil)
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)

	if sum, err := fire(t, h, slot.Add(-time.Minute), slot.Add(-time.Minute)); err != nil || sum != (firing.Summary{}) {
		t.Fatalf("before the slot: %+v %v", sum, err)
	}
	sum, err := fire(t, h, slot.Add(20*time.Second), slot)
	if err != nil || sum != (firing.Summary{Due: 1, Fired: 1}) {
		t.Fatalf("at the slot: %+v %v", sum, err)
	}
	tr := read(t, h, id)
	if tr["lastRunAt"] != "2026-11-30T10:05:00Z" || tr["lastRunStatus"] != "fired" || tr["lastError"] != nil || tr["nextRunAt"] != "2026-11-30T10:10:00Z" {
		t.Errorf("trigger after the run: %v", tr)
	}
	sid, _ := tr["lastSessionId"].(string)
	view := lookup(t, h, sid)
	if owner := view["owner"].(map[string]any); owner["userId"] != "u1" || owner["orgId"] != "o1" || owner["botId"] != nil {
		t.Errorf("owner %v", owner)
	}
	if got := h.Sessions(); len(got) != 1 || !strings.Contains(got[0], `"createdOnPlatform":{"S":"scheduled"}`) {
		t.Errorf("sessions %v", got)
	}
	key := fmt.Sprintf(`"PK":{"S":"OPERATION#u1#trigger:%s:2026-11-30T10:05:00Z"}`, id)
	if !strings.Contains(strings.Join(h.Items(), "\n"), key) {
		t.Errorf("no ledger row %s", key)
	}
	for _, other := range []string{idle, later} {
		if tr := read(t, h, other); tr["lastRunAt"] != nil {
			t.Errorf("a trigger that was not due ran: %v", tr)
		}
	}
	if sum, err := fire(t, h, slot.Add(20*time.Second), slot.Add(time.Minute)); err != nil || sum != (firing.Summary{}) {
		t.Errorf("the same event again: %+v %v", sum, err)
	}
	if n := len(h.Sessions()); n != 1 {
		t.Errorf("%d sessions", n)
	}
}

// rewind moves a trigger's next run back, as if its run had not been
// recorded (the answer of the write was lost).
func rewind(t *testing.T, h *apitest.Harness, id string, to time.Time) {
	t.Helper()
	h.SetTrigger(id, "nextRunAt", &types.AttributeValueMemberS{Value: to.Format(time.RFC3339)})
}

// TestDuplicates: a slot whose ledger row exists is a duplicate, which
// consumes the slot with the row's session, whatever the row's
// fingerprint; concurrent invocations of one event start one session.
func TestDuplicates(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	id := newTrigger(t, h, "*/5 * * * *", nil)
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	if sum, _ := fire(t, h, slot, slot); sum.Fired != 1 {
		t.Fatalf("%+v", sum)
	}
	first := read(t, h, id)["lastSessionId"]

	rewind(t, h, id, slot)
	sum, err := fire(t, h, slot, slot)
	if err != nil || sum != (firing.Summary{Due: 1, Duplicates: 1}) {
		t.Errorf("a replayed slot: %+v %v", sum, err)
	}
	if tr := read(t, h, id); tr["lastSessionId"] != first || tr["nextRunAt"] != "2026-11-30T10:10:00Z" {
		t.Errorf("after the duplicate: %v", tr)
	}

	if n := len(h.Sessions()); n != 1 {
		t.Fatalf("%d sessions", n)
	}

	// The saved allocation is retired since the first run: the retry
	// falls back, its request differs from the row's (which records a
	// retired allocation), and the row still consumes the slot, recorded
	// as the session ran.
	saved := newTrigger(t, h, "*/5 * * * *", map[string]any{"sandboxAllocation": "vercel-large"})
	if sum, _ := fire(t, h, slot, slot); sum.Fired != 1 {
		t.Fatalf("%+v", sum)
	}
	firstOfSaved := read(t, h, saved)["lastSessionId"]
	h.SetSettings([]settings.Parameter{{Name: "allocation/retired", Type: "StringList", Value: "vercel-large"}})
	rewind(t, h, saved, slot)
	if sum, err := fire(t, h, slot, slot); err != nil || sum != (firing.Summary{Due: 1, Duplicates: 1}) {
		t.Errorf("another fingerprint: %+v %v", sum, err)
	}
	if tr := read(t, h, saved); tr["lastSessionId"] != firstOfSaved || tr["lastRunStatus"] != "fired" {
		t.Errorf("after the duplicate: %v", tr)
	}
	h.SetSettings(nil)
	if n := len(h.Sessions()); n != 2 {
		t.Fatalf("%d sessions", n)
	}

	next := slot.Add(5 * time.Minute)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total firing.Summary
	for range 4 {
		wg.Go(func() {
			sum, err := h.Firing.Handle(context.Background(), events.EventBridgeEvent{Time: next})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total.Fired += sum.Fired
			total.Duplicates += sum.Duplicates
			mu.Unlock()
		})
	}
	wg.Wait()
	if total.Fired != 2 || len(h.Sessions()) != 4 {
		t.Errorf("concurrent invocations: %+v, %d sessions", total, len(h.Sessions()))
	}
}

// TestMissedSlots: a trigger that missed slots fires once, for the latest,
// and counts the others as skipped.
func TestMissedSlots(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	id := newTrigger(t, h, "* * * * *", nil) // next run 10:01
	at := time.Date(2026, 11, 30, 10, 11, 40, 0, time.UTC)
	sum, err := fire(t, h, at, at)
	if err != nil || sum != (firing.Summary{Due: 1, Fired: 1, Skipped: 10}) {
		t.Fatalf("%+v %v", sum, err)
	}
	if tr := read(t, h, id); tr["lastRunAt"] != "2026-11-30T10:11:00Z" || tr["nextRunAt"] != "2026-11-30T10:12:00Z" {
		t.Errorf("%v", tr)
	}
}

// TestOffSchedule: a next run that is no slot of the schedule (an older
// writer's, or a hand's) fires the latest slot at or before the minute:
// here one that already fired, so a duplicate.
func TestOffSchedule(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	id := newTrigger(t, h, "*/5 * * * *", nil)
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	if sum, err := fire(t, h, slot, slot); err != nil || sum.Fired != 1 {
		t.Fatalf("%+v %v", sum, err)
	}
	off := slot.Add(time.Minute)
	rewind(t, h, id, off)
	if sum, err := fire(t, h, off, off); err != nil || sum != (firing.Summary{Due: 1, Duplicates: 1}) {
		t.Errorf("%+v %v", sum, err)
	}
	if tr := read(t, h, id); tr["lastRunAt"] != "2026-11-30T10:05:00Z" || tr["nextRunAt"] != "2026-11-30T10:10:00Z" || len(h.Sessions()) != 1 {
		t.Errorf("%v, %d sessions", tr, len(h.Sessions()))
	}
}

// TestFallback: a saved allocation that now fails its checks runs with the
// effective default, counted as a fallback; one that passes runs as saved.
func TestFallback(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	kept := newTrigger(t, h, "*/5 * * * *", map[string]any{"sandboxAllocation": "vercel-large"})
	retired := newTrigger(t, h, "*/5 * * * *", map[string]any{"sandboxAllocation": "vercel-small"})
	h.SetSettings([]settings.Parameter{{Name: "allocation/retired", Type: "StringList", Value: "vercel-small"}})
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	sum, err := fire(t, h, slot, slot)
	if err != nil || sum != (firing.Summary{Due: 2, Fired: 2, Fallbacks: 1}) {
		t.Fatalf("%+v %v", sum, err)
	}
	for id, want := range map[string][2]string{kept: {"fired", "vercel-large"}, retired: {"fallback", "cloudflare-containers-standard-4"}} {
		tr := read(t, h, id)
		sb := lookup(t, h, tr["lastSessionId"].(string))["sandbox"].(map[string]any)
		if tr["lastRunStatus"] != want[0] || sb["allocation"] != want[1] {
			t.Errorf("%s: %v, sandbox %v", want[0], tr, sb)
		}
	}
	// Fallbacks count fired slots only: a replay of the slot is a
	// duplicate, still recorded as a fallback.
	rewind(t, h, retired, slot)
	if sum, err := fire(t, h, slot, slot); err != nil || sum != (firing.Summary{Due: 1, Duplicates: 1}) {
		t.Errorf("the replay: %+v %v", sum, err)
	}
	if tr := read(t, h, retired); tr["lastRunStatus"] != "fallback" {
		t.Errorf("after the replay: %v", tr)
	}
}

// TestRefusedSlot: a start refused with a 4xx counts as failed, records
// its code and no session, and consumes the slot.
func TestRefusedSlot(t *testing.T) {
	// What an older writer may have stored that the start refuses.
	for _, row := range []struct {
		rule, path, value string
	}{
		{"a bad repository", "repository.repo", "not a repo"},
		{"a token in the agent", "agent.model", "ghp_secret"},
		{"a prompt over its limit", "prompt", strings.Repeat("é", 100001)},
	} {
		t.Run(row.rule, func(t *testing.T) {
			h := setup(t, apitest.New(t, nil))
			id := newTrigger(t, h, "*/5 * * * *", nil)
			h.SetTrigger(id, row.path, &types.AttributeValueMemberS{Value: row.value})
			slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
			sum, err := fire(t, h, slot, slot)
			if err != nil || sum != (firing.Summary{Due: 1, Failed: 1}) {
				t.Fatalf("%+v %v", sum, err)
			}
			tr := read(t, h, id)
			if tr["lastRunStatus"] != "failed" || tr["lastError"] != "invalid_request" || tr["lastSessionId"] != nil || tr["nextRunAt"] != "2026-11-30T10:10:00Z" {
				t.Errorf("%v", tr)
			}
			if n := len(h.Sessions()); n != 0 {
				t.Errorf("%d sessions", n)
			}
			// Its run: the slot, failed with the code, no session.
			runs := runsOf(h, id)
			if len(runs) != 1 || !strings.Contains(runs[0], `"SK":{"S":"RUN#2026-11-30T10:05:00.000Z"}`) || !strings.Contains(runs[0], `"status":{"S":"failed"}`) ||
				!strings.Contains(runs[0], `"error":{"S":"invalid_request"}`) || strings.Contains(runs[0], "sessionId") {
				t.Errorf("runs %v", runs)
			}
		})
	}
}

// runsOf are the items of a trigger's runs.
func runsOf(h *apitest.Harness, id string) []string {
	var out []string
	for _, it := range h.Items() {
		if strings.Contains(it, `"PK":{"S":"TRIGGER#`+id+`"}`) && strings.Contains(it, `"SK":{"S":"RUN#`) {
			out = append(out, it)
		}
	}
	return out
}

// TestEventAhead: an event more than 5 minutes ahead of the clock changes
// nothing and is logged; 5 minutes ahead still fires.
func TestEventAhead(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	id := newTrigger(t, h, "*/5 * * * *", nil)
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	if sum, err := fire(t, h, slot, slot.Add(-5*time.Minute-time.Second)); err != nil || sum != (firing.Summary{}) {
		t.Errorf("ahead: %+v %v", sum, err)
	}
	if tr := read(t, h, id); tr["lastRunAt"] != nil {
		t.Errorf("ahead: %v", tr)
	}
	if logs := strings.Join(h.Logs(), "\n"); !strings.Contains(logs, `"ignored":"the event is more than 5 minutes ahead of the clock"`) {
		t.Errorf("not logged: %s", logs)
	}
	if sum, err := fire(t, h, slot, slot.Add(-5*time.Minute)); err != nil || sum.Fired != 1 {
		t.Errorf("5 minutes ahead: %+v %v", sum, err)
	}
}

// TestOutOfTime: 10 seconds before its timeout the firing takes no new
// trigger; they stay due for the next minute.
func TestOutOfTime(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	id := newTrigger(t, h, "*/5 * * * *", nil)
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	h.Firing.Now = func() time.Time { return slot }
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Second)
	defer cancel()
	sum, err := h.Firing.Handle(ctx, events.EventBridgeEvent{Time: slot})
	if err != nil || sum != (firing.Summary{}) {
		t.Errorf("%+v %v", sum, err)
	}
	if tr := read(t, h, id); tr["nextRunAt"] != "2026-11-30T10:05:00Z" {
		t.Errorf("%v", tr)
	}
	// With more than 10 seconds left it fires.
	ctx, cancel = context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if sum, err := h.Firing.Handle(ctx, events.EventBridgeEvent{Time: slot}); err != nil || sum.Fired != 1 {
		t.Errorf("15 seconds left: %+v %v", sum, err)
	}
}

// TestParked: a stored trigger that does not decode, or whose schedule no
// longer parses, cannot fire and a retry cannot mend it: it is counted as
// failed once, recorded, and stopped, and the invocation does not fail.
// The other triggers fire. The log line's warnings count the due-index
// entries that did not decode, without their values.
func TestParked(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	undecodable := newTrigger(t, h, "*/5 * * * *", nil)
	unparsable := newTrigger(t, h, "*/5 * * * *", nil)
	newTrigger(t, h, "*/5 * * * *", nil)
	h.SetTrigger(undecodable, "active", &types.AttributeValueMemberS{Value: "stored-value"})
	h.SetTrigger(unparsable, "cron", &types.AttributeValueMemberS{Value: "0 9 L * *"})
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	before := len(h.Logs())
	if sum, err := fire(t, h, slot, slot); err != nil || sum != (firing.Summary{Due: 3, Fired: 1, Failed: 2}) {
		t.Errorf("%+v %v", sum, err)
	}
	if w := warnings(t, h.Logs()[before:]); len(w) != 1 || w[0] != "due-index entries that did not decode, each read again: 1" {
		t.Errorf("warnings %q", w)
	}
	if line := h.Logs()[len(h.Logs())-1]; strings.Contains(line, "stored-value") {
		t.Errorf("a stored value is logged: %s", line)
	}
	if tr := read(t, h, unparsable); tr["active"] != false || tr["lastRunStatus"] != "failed" || tr["lastError"] != "invalid_request" {
		t.Errorf("%v", tr)
	}
	if tr := read(t, h, undecodable); tr["active"] != false || tr["lastError"] != "internal_error" {
		t.Errorf("%v", tr)
	}
	next := slot.Add(5 * time.Minute)
	before = len(h.Logs())
	if sum, err := fire(t, h, next, next); err != nil || sum != (firing.Summary{Due: 1, Fired: 1}) {
		t.Errorf("the next slot: %+v %v", sum, err)
	}
	if w := warnings(t, h.Logs()[before:]); len(w) != 0 {
		t.Errorf("warnings %q", w)
	}
}

// warnings are the warnings of an invocation's one log line.
func warnings(t *testing.T, lines []string) []string {
	t.Helper()
	if len(lines) != 1 {
		t.Fatalf("%d lines: %v", len(lines), lines)
	}
	var line struct {
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatal(err)
	}
	return line.Warnings
}

// TestOneLogLine: an invocation logs one JSON line, with its summary and
// what happened to each trigger; never a prompt.
func TestOneLogLine(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	id := newTrigger(t, h, "*/5 * * * *", map[string]any{"sandboxAllocation": "vercel-small"})
	h.SetSettings([]settings.Parameter{{Name: "allocation/retired", Type: "StringList", Value: "vercel-small"}})
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	before := len(h.Logs())
	if _, err := fire(t, h, slot, slot); err != nil {
		t.Fatal(err)
	}
	lines := h.Logs()[before:]
	if len(lines) != 1 {
		t.Fatalf("%d lines: %v", len(lines), lines)
	}
	var line struct {
		Msg      string         `json:"msg"`
		Summary  firing.Summary `json:"summary"`
		Triggers []struct {
			Trigger string `json:"trigger"`
			Slot    string `json:"slot"`
			Outcome string `json:"outcome"`
			Reason  string `json:"reason"`
		} `json:"triggers"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatal(err)
	}
	if line.Msg != "fire" || line.Summary != (firing.Summary{Due: 1, Fired: 1, Fallbacks: 1}) || len(line.Triggers) != 1 ||
		line.Triggers[0].Trigger != id || line.Triggers[0].Outcome != "fallback" || line.Triggers[0].Reason == "" {
		t.Errorf("%s", lines[0])
	}
	if strings.Contains(lines[0], "Triage") {
		t.Errorf("the prompt is logged: %s", lines[0])
	}
}

// TestShardsFireAsTheyAnswer: each shard's due triggers fire as its query
// ends, not once every shard's has: a transaction goes out while one
// query is held. A shard whose query fails leaves its triggers due and
// fails the invocation; the others fire, and the retry fires the rest.
// The event names the shards that hold the triggers, so that the query
// held or failed is one of theirs.
func TestShardsFireAsTheyAnswer(t *testing.T) {
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	f, p := apitest.Faulty(t, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	h := setup(t, f)
	const n = 20 // in more than one shard of 16, but for a chance of 16 in 16^20
	held := map[int]bool{}
	for range n {
		held[shardOf(t, h, newTrigger(t, h, "*/5 * * * *", nil))] = true
	}
	detail, _ := json.Marshal(map[string]any{"shards": slices.Collect(maps.Keys(held))})
	fireHeld := func(at time.Time) (firing.Summary, error) {
		h.Firing.Now = func() time.Time { return at }
		return h.Firing.Handle(context.Background(), events.EventBridgeEvent{Source: "aws.events", DetailType: "Scheduled Event", Time: at, Detail: detail})
	}
	var sent atomic.Bool
	before := p.Count("TransactWriteItems") // the triggers' creation
	p.Inject("Query", 1, faultproxy.Before(func() {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !sent.Load(); time.Sleep(time.Millisecond) {
			sent.Store(p.Count("TransactWriteItems") > before)
		}
	}))
	if sum, err := fireHeld(slot); err != nil || sum != (firing.Summary{Due: n, Fired: n}) || !sent.Load() {
		t.Fatalf("%+v %v; a transaction while a query was held: %v", sum, err, sent.Load())
	}
	next := slot.Add(5 * time.Minute)
	p.Inject("Query", 1, faultproxy.DynamoThrottle) // one shard's, whichever is first: no retry
	sum, err := fireHeld(next)
	if err == nil || sum.Due == 0 || sum.Due == n || sum != (firing.Summary{Due: sum.Due, Fired: sum.Due}) {
		t.Fatalf("one shard unreachable: %+v %v", sum, err)
	}
	if retry, err := fireHeld(next); err != nil || retry != (firing.Summary{Due: n - sum.Due, Fired: n - sum.Due}) {
		t.Errorf("the retry: %+v %v", retry, err)
	}
}

// TestFaults: a storage or settings fault fails the invocation, so that
// Lambda retries it, and leaves the slot due: the retry fires it once.
func TestFaults(t *testing.T) {
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	const attempts = 4 // the SDK's: 1 and 3 retries
	for _, row := range []struct {
		rule   string
		replay bool // the slot's session exists already: the retry replays it
		inject func(h *apitest.Harness, p *faultproxy.Proxy, id string)
		first  firing.Summary // the failed invocation
		retry  firing.Summary // its retry
	}{
		{"the due index is unreachable", false, func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			p.Inject("Query", 16*attempts, faultproxy.DynamoThrottle) // every shard's attempts
		}, firing.Summary{}, firing.Summary{Due: 1, Fired: 1}},
		{"the session cannot be written", false, func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			p.Inject("TransactWriteItems", attempts, faultproxy.Drop)
		}, firing.Summary{Due: 1, Failed: 1}, firing.Summary{Due: 1, Fired: 1}},
		{"the session's answer is refused", false, func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			p.Inject("TransactWriteItems", attempts, faultproxy.DynamoInternalError)
		}, firing.Summary{Due: 1, Failed: 1}, firing.Summary{Due: 1, Fired: 1}},
		// The trigger changed after the index showed it: it is read again.
		{"the trigger cannot be read again", false, func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			p.Inject("TransactWriteItems", 1, faultproxy.Before(func() {
				if err := h.UpdateTrigger(id, "version", &types.AttributeValueMemberN{Value: "7"}); err != nil {
					t.Error(err)
				}
			}))
			p.Inject("GetItem", attempts, faultproxy.DynamoInternalError)
		}, firing.Summary{Due: 1, Failed: 1}, firing.Summary{Due: 1, Fired: 1}},
		{"the trigger keeps changing", false, func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			for v := range commit.Tries {
				p.Inject("TransactWriteItems", 1, faultproxy.Before(func() {
					if err := h.UpdateTrigger(id, "version", &types.AttributeValueMemberN{Value: fmt.Sprint(10 + v)}); err != nil {
						t.Error(err)
					}
				}))
			}
		}, firing.Summary{Due: 1, Failed: 1}, firing.Summary{Due: 1, Fired: 1}},
		// The session exists: the retry finds it through the slot's key.
		{"a replay cannot be recorded", true, func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			p.Inject("TransactWriteItems", 1, faultproxy.Before(func() {})) // the start's, refused by the row
			p.Inject("TransactWriteItems", attempts, faultproxy.DynamoThrottle)
		}, firing.Summary{Due: 1, Failed: 1}, firing.Summary{Due: 1, Duplicates: 1}},
	} {
		t.Run(row.rule, func(t *testing.T) {
			f, p := apitest.Faulty(t)
			h := setup(t, f)
			id := newTrigger(t, h, "*/5 * * * *", nil)
			if row.replay {
				if sum, err := fire(t, h, slot, slot); err != nil || sum.Fired != 1 {
					t.Fatalf("%+v %v", sum, err)
				}
				rewind(t, h, id, slot)
			}
			before := read(t, h, id)
			row.inject(h, p, id)
			if sum, err := fire(t, h, slot, slot); err == nil || sum != row.first {
				t.Fatalf("%+v %v", sum, err)
			}
			if tr := read(t, h, id); tr["nextRunAt"] != "2026-11-30T10:05:00Z" || tr["lastRunAt"] != before["lastRunAt"] {
				t.Errorf("the slot moved: %v", tr)
			}
			if sum, err := fire(t, h, slot, slot); err != nil || sum != row.retry {
				t.Errorf("the retry: %+v %v", sum, err)
			}
			if n := len(h.Sessions()); n != 1 {
				t.Errorf("%d sessions", n)
			}
			if tr := read(t, h, id); tr["nextRunAt"] != "2026-11-30T10:10:00Z" || tr["lastRunStatus"] != "fired" || tr["lastSessionId"] == nil {
				t.Errorf("after the retry: %v", tr)
			}
		})
	}
	t.Run("settings unreadable", func(t *testing.T) {
		h := setup(t, apitest.New(t, nil))
		h.BreakSettings()
		// Nothing due: the settings are not needed.
		if sum, err := fire(t, h, slot, slot); err != nil || sum != (firing.Summary{}) {
			t.Errorf("nothing due: %+v %v", sum, err)
		}
		newTrigger(t, h, "*/5 * * * *", nil)
		if sum, err := fire(t, h, slot, slot); err == nil || sum != (firing.Summary{Due: 1, Failed: 1}) {
			t.Errorf("%+v %v", sum, err)
		}
	})
}

// TestRequestsPerPath: the DynamoDB requests of each way a due trigger can
// go, beside the 16 queries of the due index, the 16 of the sweep's live
// shards (sweep_test.go counts its marks) and the one read of the due
// triggers' environments (a BatchGetItem per shard that has any). A fired
// slot is one write: the session, its ledger row, its prompt and the
// trigger's advance in one transaction, with no read of its own. The other paths cost more, each counted here
// on the embedded endpoint, which, as DynamoDB does, hands back the ledger
// row that refused a transaction in its cancellation reason.
func TestRequestsPerPath(t *testing.T) {
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	type ops map[string]int
	for _, row := range []struct {
		path    string
		prepare func(h *apitest.Harness, p *faultproxy.Proxy, id string)
		want    firing.Summary
		ops     ops
	}{
		{"fired", func(*apitest.Harness, *faultproxy.Proxy, string) {}, firing.Summary{Due: 1, Fired: 1},
			ops{"TransactWriteItems": 1}},
		{"fallback", func(h *apitest.Harness, _ *faultproxy.Proxy, id string) {
			h.SetTrigger(id, "sandboxAllocation", &types.AttributeValueMemberS{Value: "cloudflare-shared"})
		}, firing.Summary{Due: 1, Fired: 1, Fallbacks: 1}, ops{"TransactWriteItems": 1}},
		{"changed after the index showed it: read again, fired as stored", func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			p.Inject("TransactWriteItems", 1, faultproxy.Before(func() {
				if err := h.UpdateTrigger(id, "version", &types.AttributeValueMemberN{Value: "7"}); err != nil {
					t.Error(err)
				}
			}))
		}, firing.Summary{Due: 1, Fired: 1}, ops{"TransactWriteItems": 2, "GetItem": 1}},
		{"moved on since the index showed it (by hand): read again, not due", func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			p.Inject("TransactWriteItems", 1, faultproxy.Before(func() {
				if err := h.UpdateTrigger(id, "nextRunAt", &types.AttributeValueMemberS{Value: "2026-11-30T10:10:00Z"}); err != nil {
					t.Error(err)
				}
			}))
		}, firing.Summary{}, ops{"TransactWriteItems": 1, "GetItem": 1}},
		// The transaction is refused by the ledger row and by the advance:
		// the trigger is read again, and has moved on.
		{"another invocation fired it first", func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			other := setup(t, apitest.NewOn(t, h.Client, h.Client, h.Table))
			p.Inject("TransactWriteItems", 1, faultproxy.Before(func() {
				other.Firing.Now = func() time.Time { return slot }
				if sum, err := other.Firing.Handle(context.Background(), events.EventBridgeEvent{Time: slot}); err != nil || sum.Fired != 1 {
					t.Errorf("the other invocation: %+v %v", sum, err)
				}
			}))
		}, firing.Summary{}, ops{"TransactWriteItems": 1, "GetItem": 1}},
		// The SDK's retry carries the transaction's ClientRequestToken, and
		// DynamoDB answers it as it answered the first.
		{"the transaction's answer is lost: the SDK's retry is answered as the first", func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			p.Inject("TransactWriteItems", 1, faultproxy.DropAfter)
		}, firing.Summary{Due: 1, Fired: 1}, ops{"TransactWriteItems": 2, "retried": 1}},
		{"duplicate: the slot's session exists", func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			if sum, err := fire(t, h, slot, slot); err != nil || sum.Fired != 1 {
				t.Fatalf("%+v %v", sum, err)
			}
			rewind(t, h, id, slot)
		}, firing.Summary{Due: 1, Duplicates: 1}, ops{"TransactWriteItems": 2, "GetItem": 1}},
		{"duplicate whose record meets a transaction on the trigger: judged again", func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			if sum, err := fire(t, h, slot, slot); err != nil || sum.Fired != 1 {
				t.Fatalf("%+v %v", sum, err)
			}
			rewind(t, h, id, slot)
			p.Inject("TransactWriteItems", 1, faultproxy.Before(func() {})) // the start's, refused by the row
			p.Inject("TransactWriteItems", 1, faultproxy.DynamoConflict)
		}, firing.Summary{Due: 1, Duplicates: 1}, ops{"TransactWriteItems": 4, "GetItem": 3}},
		// A start refused once it judged the slot's row hands back what it
		// read: the firing reads again only the session the start did not.
		{"duplicate whose row records another request", func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			firedOnce(t, h, id, slot)
			h.SetTrigger(id, "prompt", &types.AttributeValueMemberS{Value: "Triage old issues."})
		}, firing.Summary{Due: 1, Duplicates: 1}, ops{"TransactWriteItems": 2, "GetItem": 1}},
		{"duplicate whose row an older writer left failed, its session there, for another request", func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			firedOnce(t, h, id, slot)
			if err := setSlotRow(h, id, slot, map[string]string{"status": "failed", "fingerprint": "another"}); err != nil {
				t.Fatal(err)
			}
		}, firing.Summary{Due: 1, Duplicates: 1}, ops{"TransactWriteItems": 2, "GetItem": 2}},
		{"duplicate whose row's session is gone", func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			firedOnce(t, h, id, slot)
			if err := setSlotRow(h, id, slot, map[string]string{"sessionId": "workspace_gone"}); err != nil {
				t.Fatal(err)
			}
		}, firing.Summary{Due: 1, Duplicates: 1}, ops{"TransactWriteItems": 2, "GetItem": 1}},
		{"refused with a 4xx", func(h *apitest.Harness, _ *faultproxy.Proxy, id string) {
			h.SetTrigger(id, "repository.repo", &types.AttributeValueMemberS{Value: "not a repo"})
		}, firing.Summary{Due: 1, Failed: 1}, ops{"GetItem": 1, "TransactWriteItems": 1}},
	} {
		t.Run(row.path, func(t *testing.T) {
			f, p := apitest.Faulty(t)
			h := setup(t, f)
			id := newTrigger(t, h, "*/5 * * * *", nil)
			row.prepare(h, p, id)
			counts := func() ops {
				return ops{"Query": p.Count("Query"), "BatchGetItem": p.Count("BatchGetItem"), "TransactWriteItems": p.Count("TransactWriteItems"), "GetItem": p.Count("GetItem"), "UpdateItem": p.Count("UpdateItem")}
			}
			before := counts()
			sum, err := fire(t, h, slot, slot)
			if err != nil || sum != row.want {
				t.Fatalf("%+v %v", sum, err)
			}
			after := counts()
			row.ops["Query"], row.ops["BatchGetItem"] = 16+16, 1 // the shards, due and live, and the due triggers' environments
			for op, n := range after {                           // attempts, as the proxy sees them
				if got := n - before[op]; got != row.ops[op] {
					t.Errorf("%s: %d requests, want %d", op, got, row.ops[op])
				}
			}
			var line struct {
				DynamodbRequests int `json:"dynamodbRequests"`
			}
			logs := h.Logs()
			if err := json.Unmarshal([]byte(logs[len(logs)-1]), &line); err != nil {
				t.Fatal(err)
			}
			// The log line counts operations: one the SDK retried is one.
			total := -row.ops["retried"]
			for op, n := range row.ops {
				if op != "retried" {
					total += n
				}
			}
			if line.DynamodbRequests != total {
				t.Errorf("the log line counts %d requests, want %d", line.DynamodbRequests, total)
			}
		})
	}
}

// firedOnce fires a trigger's slot, then rewinds the trigger to it, as if
// the run had not been recorded: the slot's row and session exist.
func firedOnce(t *testing.T, h *apitest.Harness, id string, slot time.Time) {
	t.Helper()
	if sum, err := fire(t, h, slot, slot); err != nil || sum.Fired != 1 {
		t.Fatalf("%+v %v", sum, err)
	}
	rewind(t, h, id, slot)
}

// TestLostAnswerUnknown: a transaction whose answer was lost, and whose
// retries the SDK then gave up on (each refused for a fault), has an
// outcome the invocation cannot know: a fault, never internal_error. The
// invocation fails, and its retry finds the slot fired, once.
func TestLostAnswerUnknown(t *testing.T) {
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	f, p := apitest.Faulty(t)
	h := setup(t, f)
	id := newTrigger(t, h, "*/5 * * * *", nil)
	p.Inject("TransactWriteItems", 1, faultproxy.DropAfter)
	p.Inject("TransactWriteItems", 3, faultproxy.DynamoInternalError)
	sum, err := fire(t, h, slot, slot)
	if sum != (firing.Summary{Due: 1, Failed: 1}) || problem.CodeOf(err) != problem.ServiceUnavailable {
		t.Fatalf("%+v %v", sum, err)
	}
	if sum, err := fire(t, h, slot, slot); err != nil || sum != (firing.Summary{}) {
		t.Errorf("the retry: %+v %v", sum, err)
	}
	if tr := read(t, h, id); tr["lastRunAt"] != "2026-11-30T10:05:00Z" || len(h.Sessions()) != 1 {
		t.Errorf("%v, %d sessions", tr, len(h.Sessions()))
	}
}

// midReserve is an invocation's context whose 10-second reserve before
// its timeout begins 4 s from now (time enough for the due index's queries
// on a busy machine), with the first transaction held until the reserve
// has begun, well before the timeout itself.
func midReserve(t *testing.T, p *faultproxy.Proxy) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Second)
	t.Cleanup(cancel)
	deadline, _ := ctx.Deadline()
	reserve := deadline.Add(-10 * time.Second)
	p.Inject("TransactWriteItems", 1, faultproxy.Before(func() { time.Sleep(time.Until(reserve) + 200*time.Millisecond) }))
	return ctx
}

// TestReserveMidBurst: once the 10-second reserve before the timeout has
// begun, no new trigger is taken; the one in progress ends with its run
// recorded, the rest stay due, and the log line says how many were left.
func TestReserveMidBurst(t *testing.T) {
	f, p := apitest.Faulty(t)
	h := setup(t, f)
	ids := []string{newTrigger(t, h, "*/5 * * * *", nil), newTrigger(t, h, "*/5 * * * *", nil), newTrigger(t, h, "*/5 * * * *", nil)}
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	ctx := midReserve(t, p)
	fr := *h.Firing
	fr.Concurrency = 1
	fr.Now = func() time.Time { return slot }
	sum, err := fr.Handle(ctx, events.EventBridgeEvent{Time: slot})
	if err != nil || sum != (firing.Summary{Due: 1, Fired: 1}) {
		t.Fatalf("%+v %v", sum, err)
	}
	if logs := h.Logs(); !strings.Contains(logs[len(logs)-1], `"leftDue":2`) {
		t.Errorf("%s", logs[len(logs)-1])
	}
	due := 0
	for _, id := range ids {
		if read(t, h, id)["nextRunAt"] == "2026-11-30T10:05:00Z" {
			due++
		}
	}
	if due != 2 || len(h.Sessions()) != 1 {
		t.Errorf("%d left due, %d sessions", due, len(h.Sessions()))
	}
	if sum, err := fire(t, h, slot, slot); err != nil || sum != (firing.Summary{Due: 2, Fired: 2}) {
		t.Errorf("the next minute: %+v %v", sum, err)
	}
}

// TestDuplicateSessionUnreadable: a slot whose ledger row exists, refused
// by the start (its allocation retired since), whose session cannot be
// read for a fault: what ran is not known, so the slot stays due and the
// invocation fails; the retry records it as the session ran.
func TestDuplicateSessionUnreadable(t *testing.T) {
	f, p := apitest.Faulty(t)
	h := setup(t, f)
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	id := newTrigger(t, h, "*/5 * * * *", map[string]any{"sandboxAllocation": "vercel-large"})
	if sum, _ := fire(t, h, slot, slot); sum.Fired != 1 {
		t.Fatalf("%+v", sum)
	}
	h.SetSettings([]settings.Parameter{{Name: "allocation/retired", Type: "StringList", Value: "vercel-large"}})
	rewind(t, h, id, slot)
	// The start judged the row its refused transaction handed back, and
	// did not read the session: the firing reads it.
	p.InjectEvery("GetItem", 1, faultproxy.DynamoInternalError)
	sum, err := fire(t, h, slot, slot)
	p.ClearEvery()
	if err == nil || sum != (firing.Summary{Due: 1, Failed: 1}) {
		t.Fatalf("%+v %v", sum, err)
	}
	if tr := read(t, h, id); tr["nextRunAt"] != slot.Format(time.RFC3339) {
		t.Errorf("the slot was consumed: %v", tr)
	}
	if sum, err := fire(t, h, slot, slot); err != nil || sum != (firing.Summary{Due: 1, Duplicates: 1}) {
		t.Fatalf("the retry: %+v %v", sum, err)
	}
	if tr := read(t, h, id); tr["lastRunStatus"] != "fired" || tr["nextRunAt"] != "2026-11-30T10:10:00Z" {
		t.Errorf("after the retry: %v", tr)
	}
}
