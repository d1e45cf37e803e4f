package triggerapi_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/emftest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/shared/settings"
)

func runNowCall(h *apitest.Harness, claims map[string]string, id, key, b string) apitest.Result {
	c := apitest.Call{Method: "POST", Path: "/v1/triggers/" + id + "/run", Claims: claims, Body: b}
	if key != "" {
		c.Headers = map[string]string{"Idempotency-Key": key}
	}
	return h.Do(c)
}

// count is how many of the table's items contain every one of parts.
func count(h *apitest.Harness, parts ...string) int {
	n := 0
	for _, it := range h.Items() {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(it, p)
		}
		if all {
			n++
		}
	}
	return n
}

// scheduleState is the stored trigger's schedule state and version, as GET
// shows them.
func scheduleState(t *testing.T, h *apitest.Harness, id string) [3]any {
	t.Helper()
	r := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: user})
	return [3]any{r.Body["nextRunAt"], r.Body["lastRunAt"], version(t, h, id)}
}

// TestRunNow: a paused trigger's session starts now, for its user and org,
// created on trigger-now, with a manual run beside it; the schedule state
// and version stay; without a key every call starts a new session, with
// one a replay is 200 with the same session and run.
func TestRunNow(t *testing.T) {
	h := newHarness(t)
	id := newTrigger(t, h, map[string]any{"active": false, "orgId": "o1", "sandboxAllocation": "vercel-small"})
	before := scheduleState(t, h, id)

	r := runNowCall(h, user, id, "", "")
	session, _ := r.Body["session"].(map[string]any)
	run, _ := r.Body["run"].(map[string]any)
	if r.Status != 201 || session == nil || run == nil || session["replayed"] != false ||
		r.Headers["Location"] != "/v1/sessions/"+session["sessionId"].(string)+"/allocation" {
		t.Fatalf("%d %v %s", r.Status, r.Headers, r.Raw)
	}
	sid := session["sessionId"].(string)
	if run["kind"] != "manual" || run["sessionId"] != sid || run["status"] != "fired" || run["error"] != nil || run["slot"] != run["recordedAt"] {
		t.Errorf("run %v", run)
	}
	if sandbox := session["sandbox"].(map[string]any); sandbox["allocation"] != "vercel-small" {
		t.Errorf("the saved allocation was not used: %v", sandbox)
	}
	if n := count(h, `"SESSION#`+sid+`"`, `"trigger-now"`, `"u1"`, `"o1"`, `"acme/app"`); n != 1 {
		t.Errorf("the session is not the trigger's, created on trigger-now: %d", n)
	}
	if after := scheduleState(t, h, id); after != before {
		t.Errorf("schedule state %v, was %v", after, before)
	}
	if r := runNowCall(h, user, id, "", "{}"); r.Status != 201 || r.Body["session"].(map[string]any)["sessionId"] == sid {
		t.Errorf("without a key, a second call: %d %s", r.Status, r.Raw)
	}

	first := runNowCall(h, user, id, "try-1", "")
	again := runNowCall(h, user, id, "try-1", "{}")
	fs, as := first.Body["session"].(map[string]any), again.Body["session"].(map[string]any)
	if first.Status != 201 || again.Status != 200 || as["replayed"] != true || fs["sessionId"] != as["sessionId"] ||
		first.Body["run"].(map[string]any)["slot"] != again.Body["run"].(map[string]any)["slot"] {
		t.Errorf("replay: %d %s\n%d %s", first.Status, first.Raw, again.Status, again.Raw)
	}
	if n := count(h, `"OPERATION#u1#trigger:`+id+`:now:try-1"`); n != 1 {
		t.Errorf("ledger rows of the key: %d", n)
	}
	// The key again after the trigger changed: another payload, 422, and
	// no run recorded (the key's state refuses no start of the trigger).
	if p := h.Do(apitest.Call{Method: "PATCH", Path: "/v1/triggers/" + id, Claims: user, Body: `{"prompt":"something else"}`}); p.Status != 200 {
		t.Fatalf("patch: %d %s", p.Status, p.Raw)
	}
	if r := runNowCall(h, user, id, "try-1", ""); r.Status != 422 || r.Code() != "operation_key_payload_mismatch" {
		t.Errorf("the key for another payload: %d %s", r.Status, r.Raw)
	}
	before = scheduleState(t, h, id) // the patch's own change

	runs := runsCall(h, user, id, "")
	items, _ := runs.Body["items"].([]any)
	if runs.Status != 200 || len(items) != 3 {
		t.Fatalf("runs: %d %s", runs.Status, runs.Raw)
	}
	for _, it := range items {
		if it.(map[string]any)["kind"] != "manual" {
			t.Errorf("run %v", it)
		}
	}
	if after := scheduleState(t, h, id); after != before {
		t.Errorf("schedule state %v, was %v", after, before)
	}
}

// TestRunNowRefused: requests that are not a start now, another owner's
// or a deleted trigger change nothing; a refused start is the start
// route's answer and a failed manual run.
func TestRunNowRefused(t *testing.T) {
	h := newHarness(t)
	id := newTrigger(t, h, nil)
	for _, row := range []struct {
		rule, claims, id, key, body string
		status                      int
		code                        string
	}{
		{"a body with a member", "user", id, "", `{"a":1}`, 400, "invalid_request"},
		{"a body that is no object", "user", id, "", `[]`, 400, "invalid_request"},
		{"a reserved key", "user", id, "trigger:x", "", 400, "invalid_request"},
		{"a key with a space", "user", id, "a b", "", 400, "invalid_request"},
		{"a key over 128", "user", id, strings.Repeat("k", 129), "", 400, "invalid_request"},
		{"a key with ghp_", "user", id, "ghp_abc", "", 400, "invalid_request"},
		{"a key with gho_", "user", id, "x-gho_abc", "", 400, "invalid_request"},
		{"a key with ghs_", "user", id, "ghs_abc", "", 400, "invalid_request"},
		{"a key with ghu_", "user", id, "ghu_abc", "", 400, "invalid_request"},
		{"a key with github_pat_", "user", id, "github_pat_abc", "", 400, "invalid_request"},
		{"a key with glpat-", "user", id, "glpat-abc", "", 400, "invalid_request"},
		{"an invalid id", "user", "a!b", "", "", 400, "invalid_request"},
		{"another owner's", "other", id, "", "", 404, "not_found"},
		{"no such trigger", "user", "trg_none", "", "", 404, "not_found"},
	} {
		t.Run(row.rule, func(t *testing.T) {
			before := h.Snapshot()
			claims := user
			if row.claims == "other" {
				claims = other
			}
			r := runNowCall(h, claims, row.id, row.key, row.body)
			if r.Status != row.status || r.Code() != row.code {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
			if h.Snapshot() != before {
				t.Error("the table changed")
			}
		})
	}

	// A stored trigger that no longer passes the start's rules is refused
	// as the start route refuses it, and recorded as a failed manual run.
	h.SetTrigger(id, "repository.repo", &types.AttributeValueMemberS{Value: "not a repo"})
	before := scheduleState(t, h, id)
	if r := runNowCall(h, user, id, "k", ""); r.Status != 400 || r.Code() != "invalid_request" {
		t.Errorf("refused: %d %s", r.Status, r.Raw)
	}
	runs := runsCall(h, user, id, "")
	items, _ := runs.Body["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("runs %s", runs.Raw)
	}
	if run := items[0].(map[string]any); run["kind"] != "manual" || run["status"] != "failed" || run["error"] != "invalid_request" ||
		run["sessionId"] != nil || run["slot"] != "2026-11-30T10:00:30Z" {
		t.Errorf("run %v", run)
	}
	if after := scheduleState(t, h, id); after != before {
		t.Errorf("schedule state %v, was %v", after, before)
	}

	// A deleted trigger is 404, and starts nothing.
	h.SetTrigger(id, "repository.repo", &types.AttributeValueMemberS{Value: "acme/app"})
	if r := h.Do(apitest.Call{Method: "DELETE", Path: "/v1/triggers/" + id, Claims: user}); r.Status != 204 {
		t.Fatal(r.Raw)
	}
	if r := runNowCall(h, user, id, "", ""); r.Status != 404 || count(h, `"SESSION#`, `"METADATA"`) != 0 {
		t.Errorf("deleted: %d %s", r.Status, r.Raw)
	}
}

// TestRunNowOnce: 50 concurrent calls with one key start one session and
// record one run; each answer is that session and run.
func TestRunNowOnce(t *testing.T) {
	h := newHarness(t)
	id := newTrigger(t, h, nil)
	results := make([]apitest.Result, 50)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = runNowCall(h, user, id, "once", "") })
	}
	wg.Wait()
	created := 0
	var sid any
	for _, r := range results {
		if r.Status != 201 && r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		if r.Status == 201 {
			created++
		}
		s := r.Body["session"].(map[string]any)["sessionId"]
		if sid == nil {
			sid = s
		}
		if s != sid || r.Body["run"].(map[string]any)["sessionId"] != sid {
			t.Errorf("another session: %s", r.Raw)
		}
	}
	if created != 1 || count(h, `"SESSION#`, `"METADATA"`) != 1 || count(h, `"SK":{"S":"RUN#`) != 1 {
		t.Errorf("%d created, %d sessions, %d runs", created, count(h, `"SESSION#`, `"METADATA"`), count(h, `"SK":{"S":"RUN#`))
	}
}

// TestRunNowMeetsFiring: a start now and a firing of the same trigger at
// the same moment neither block nor undo each other: the slot fires and
// advances the trigger, and the start now has its own session and run.
func TestRunNowMeetsFiring(t *testing.T) {
	for range 5 {
		h := newHarness(t)
		id := newTrigger(t, h, map[string]any{"schedule": map[string]any{"cron": "* * * * *"}})
		at := clock.Add(30 * time.Second) // 10:01:00, the trigger's first slot
		// Both at the same second: the manual run's slot is the slot's.
		h.Triggers.Now = func() time.Time { return at }
		h.Start.Now = func() time.Time { return at }
		f := *h.Firing
		f.Now = func() time.Time { return at }
		var wg sync.WaitGroup
		var r apitest.Result
		var fired, firedErr = 0, error(nil)
		wg.Go(func() { r = runNowCall(h, user, id, "now", "") })
		wg.Go(func() {
			sum, err := f.Handle(context.Background(), events.EventBridgeEvent{Source: "aws.events", DetailType: "Scheduled Event", Time: at})
			fired, firedErr = sum.Fired, err
		})
		wg.Wait()
		if r.Status != 201 || fired != 1 || firedErr != nil {
			t.Fatalf("start now %d %s; fired %d: %v", r.Status, r.Raw, fired, firedErr)
		}
		tr := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: user})
		if tr.Body["lastRunAt"] != "2026-11-30T10:01:00Z" || tr.Body["nextRunAt"] != "2026-11-30T10:02:00Z" || tr.Body["lastSessionId"] == r.Body["session"].(map[string]any)["sessionId"] {
			t.Errorf("trigger %s", tr.Raw)
		}
		runs := runsCall(h, user, id, "")
		kinds := map[any]int{}
		for _, it := range runs.Body["items"].([]any) {
			kinds[it.(map[string]any)["kind"]]++
		}
		if kinds["manual"] != 1 || kinds["scheduled"] != 1 || count(h, `"SESSION#`, `"METADATA"`) != 2 || runs.Body["items"].([]any)[0].(map[string]any)["slot"] != "2026-11-30T10:01:00Z" {
			t.Errorf("runs %s", runs.Raw)
		}
	}
}

// TestRunNowMetrics: a start now logs Starts 1, its replay Replays 1, by
// the sandbox's provider and allocation, as the start route does; a
// refusal logs neither, but Refusals by its code.
func TestRunNowMetrics(t *testing.T) {
	h := newHarness(t)
	id := newTrigger(t, h, map[string]any{"sandboxAllocation": "vercel-small"})
	for _, row := range []struct {
		key    string
		status int
		metric string
	}{{"m", 201, "Starts"}, {"m", 200, "Replays"}, {"trigger:m", 400, "Refusals"}} {
		if r := runNowCall(h, user, id, row.key, ""); r.Status != row.status {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		logs := h.Logs()
		line := emftest.Check(t, logs[len(logs)-1])
		for _, m := range []string{"Starts", "Replays", "Refusals"} {
			if v, ok := line.Value(m); ok != (m == row.metric) || ok && v != 1 {
				t.Errorf("%d: %s on the line: %v %v", row.status, m, ok, v)
			}
		}
		if dims := line.Dimensions(); row.metric != "Refusals" && (dims["Allocation"] != "vercel-small" || dims["Provider"] != "vercel") {
			t.Errorf("%d: dimensions %v", row.status, line.Dimensions())
		}
	}
}

// TestRunNowPages: manual runs of the same second, beside a slot's run of
// that second, each come once, a page at a time.
func TestRunNowPages(t *testing.T) {
	h := newHarness(t)
	id := newTrigger(t, h, map[string]any{"schedule": map[string]any{"cron": "* * * * *"}})
	at := clock.Add(30 * time.Second) // 10:01:00, the trigger's first slot
	h.Triggers.Now = func() time.Time { return at }
	h.Start.Now = func() time.Time { return at }
	fireAt(t, h, at)
	want := map[any]bool{}
	for range 3 {
		r := runNowCall(h, user, id, "", "")
		want[r.Body["session"].(map[string]any)["sessionId"]] = true
	}
	seen := map[any]bool{}
	query := "?limit=1"
	for pages := 0; pages < 6; pages++ {
		r := runsCall(h, user, id, query)
		for _, it := range r.Body["items"].([]any) {
			run := it.(map[string]any)
			if seen[run["sessionId"]] || run["slot"] != "2026-11-30T10:01:00Z" {
				t.Errorf("page %d: %v", pages, run)
			}
			seen[run["sessionId"]] = true
		}
		c, ok := r.Body["nextCursor"].(string)
		if !ok {
			break
		}
		query = "?limit=1&cursor=" + c
	}
	if len(seen) != 4 {
		t.Errorf("%d runs seen, want 4", len(seen))
	}
	for sid := range want {
		if !seen[sid] {
			t.Errorf("run of %v not listed", sid)
		}
	}
}

// TestRunKindStored: a run without a kind is a slot's, shown as
// scheduled; an unknown kind, or a manual run without its id, does not
// decode.
func TestRunKindStored(t *testing.T) {
	for _, row := range []struct {
		rule, attrs string
		status      int
	}{
		{"no kind", ``, 200},
		{"an unknown kind", `,"kind":{"S":"retry"}`, 500},
		{"a manual run without its id", `,"kind":{"S":"manual"}`, 500},
	} {
		t.Run(row.rule, func(t *testing.T) {
			h := newHarness(t)
			id := newTrigger(t, h, nil)
			h.Put(fmt.Appendf(nil, `{"PK":{"S":"TRIGGER#%s"},"SK":{"S":"RUN#2026-11-30T10:00:00Z"},"triggerId":{"S":"%s"},"slot":{"S":"2026-11-30T10:00:00Z"},`+
				`"status":{"S":"fired"},"sessionId":{"S":"workspace_1"},"recordedAt":{"S":"2026-11-30T10:00:01Z"},"expiresAt":{"N":"%d"}%s}`,
				id, id, clock.Add(time.Hour).Unix(), row.attrs))
			r := runsCall(h, user, id, "")
			if r.Status != row.status || row.status == 200 && r.Body["items"].([]any)[0].(map[string]any)["kind"] != "scheduled" {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
		})
	}
}

// TestRunNowByRow: an answer decided by the key's ledger row (a replay,
// a start in progress, another payload or request, the row's allocation
// retired since) records no run, however often the key is retried; a
// start judged afresh and refused records one.
func TestRunNowByRow(t *testing.T) {
	h := newHarness(t)
	id := newTrigger(t, h, map[string]any{"sandboxAllocation": "vercel-small"})
	if r := runNowCall(h, user, id, "k1", ""); r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	h.Put(fmt.Appendf(nil, `{"PK":{"S":"OPERATION#u1#trigger:%s:now:busy"},"SK":{"S":"LEDGER"},"intent":{"S":"create_session"},`+
		`"fingerprint":{"S":"fp"},"status":{"S":"in_progress"},"sessionId":{"S":"workspace_busy"},"leaseUntil":{"N":"%d"},`+
		`"createdAt":{"S":"2026-11-30T10:00:00Z"},"expiresAt":{"N":"%d"}}`, id, time.Now().Add(time.Hour).UnixMilli(), time.Now().Add(time.Hour).Unix()))
	runs := func() int { return count(h, `"PK":{"S":"TRIGGER#`+id+`"}`, `"SK":{"S":"RUN#`) }
	for _, row := range []struct {
		rule, key string
		status    int
		code      string
	}{
		{"a replay", "k1", 200, ""},
		{"in progress", "busy", 409, "creation_in_progress"},
	} {
		for range 2 {
			if r := runNowCall(h, user, id, row.key, ""); r.Status != row.status || r.Code() != row.code || runs() != 1 {
				t.Errorf("%s: %d %s, %d runs", row.rule, r.Status, r.Raw, runs())
			}
		}
	}
	h.SetSettings([]settings.Parameter{{Name: "allocation/retired", Type: "StringList", Value: "vercel-small"}})
	for range 2 {
		if r := runNowCall(h, user, id, "k1", ""); r.Status != 422 || r.Code() != "sandbox_allocation_retired" || runs() != 1 {
			t.Errorf("its allocation retired: %d %s, %d runs", r.Status, r.Raw, runs())
		}
	}
	// A new key is judged afresh: its start falls back to the default, and
	// records its run.
	h.SetSettings([]settings.Parameter{{Name: "allocation/default", Type: "String", Value: "vercel-large"},
		{Name: "selection/owners", Type: "StringList", Value: "-"}, {Name: "allocation/retired", Type: "StringList", Value: "vercel-small"}})
	if r := runNowCall(h, user, id, "k2", ""); r.Status != 201 || runs() != 2 {
		t.Errorf("a fallback start: %d %s, %d runs", r.Status, r.Raw, runs())
	}
}

// TestRunNowReplayStored: a replay answers the manual run as it was
// stored, not as the policy would judge it now.
func TestRunNowReplayStored(t *testing.T) {
	h := newHarness(t)
	id := newTrigger(t, h, nil)
	first := runNowCall(h, user, id, "k1", "")
	if first.Status != 201 || first.Body["run"].(map[string]any)["status"] != "fired" {
		t.Fatalf("%d %s", first.Status, first.Raw)
	}
	for _, it := range h.Items() {
		if strings.Contains(it, `"PK":{"S":"TRIGGER#`+id+`"}`) && strings.Contains(it, `"SK":{"S":"RUN#`) {
			h.Put([]byte(strings.Replace(it, `"status":{"S":"fired"}`, `"status":{"S":"fallback"}`, 1)))
		}
	}
	again := runNowCall(h, user, id, "k1", "")
	if run := again.Body["run"].(map[string]any); again.Status != 200 || run["status"] != "fallback" || run["slot"] != first.Body["run"].(map[string]any)["slot"] {
		t.Errorf("replay %d %s", again.Status, again.Raw)
	}
}

// TestRunNowTriggerMoved: the session and its run, or a refusal's run, are
// written on the condition that the trigger is as it was read: a trigger
// changed in between is judged again, and the session starts with what
// it says now; one deleted in between is 404 with nothing written.
func TestRunNowTriggerMoved(t *testing.T) {
	change := func(h *apitest.Harness, id string) func() {
		return func() {
			_ = h.UpdateTrigger(id, "repository.repo", &types.AttributeValueMemberS{Value: "acme/changed"})
			_ = h.UpdateTrigger(id, "version", &types.AttributeValueMemberN{Value: "99"})
		}
	}
	for _, key := range []string{"", "k1"} {
		h, p := apitest.Faulty(t)
		h.Triggers.Now = func() time.Time { return clock }
		id := newTrigger(t, h, nil)
		p.Inject("TransactWriteItems", 1, faultproxy.Before(change(h, id)))
		r := runNowCall(h, user, id, key, "")
		if r.Status != 201 || count(h, `"SESSION#`, `"METADATA"`) != 1 || count(h, `"SESSION#`, `"METADATA"`, `"acme/changed"`) != 1 ||
			count(h, `"SK":{"S":"RUN#`) != 1 {
			t.Errorf("key %q, changed: %d %s", key, r.Status, r.Raw)
		}
	}

	h, p := apitest.Faulty(t)
	h.Triggers.Now = func() time.Time { return clock }
	id := newTrigger(t, h, nil)
	remove := faultproxy.Before(func() {
		_, _ = h.Client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(h.Table), Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "TRIGGER#" + id}, "SK": &types.AttributeValueMemberS{Value: "TRIGGER"}}})
	})
	p.Inject("TransactWriteItems", 1, remove)
	if r := runNowCall(h, user, id, "k1", ""); r.Status != 404 || count(h, `"SESSION#`, `"METADATA"`) != 0 || count(h, `"OPERATION#`) != 0 || count(h, `"SK":{"S":"RUN#`) != 0 {
		t.Errorf("deleted: %d %s", r.Status, r.Raw)
	}

	id = newTrigger(t, h, nil)
	h.SetTrigger(id, "repository.repo", &types.AttributeValueMemberS{Value: "not a repo"})
	p.Inject("TransactWriteItems", 1, remove)
	if r := runNowCall(h, user, id, "", ""); r.Status != 404 || count(h, `"SK":{"S":"RUN#`) != 0 {
		t.Errorf("a refusal, deleted: %d %s", r.Status, r.Raw)
	}
}

// TestRunNowOrder: runs list newest first to the millisecond of their
// start, within one second too.
func TestRunNowOrder(t *testing.T) {
	h := newHarness(t)
	id := newTrigger(t, h, nil)
	var mu sync.Mutex
	at := clock
	h.Start.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); at = at.Add(time.Millisecond); return at }
	ids := []string{"workspace_c", "workspace_b", "workspace_a"} // started in this order
	next := 0
	h.Start.NewSessionID = func() string { mu.Lock(); defer mu.Unlock(); next++; return ids[next-1] }
	for range ids {
		if r := runNowCall(h, user, id, "", ""); r.Status != 201 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	}
	var got []any
	for _, it := range runsCall(h, user, id, "").Body["items"].([]any) {
		got = append(got, it.(map[string]any)["sessionId"])
	}
	if want := []any{"workspace_a", "workspace_b", "workspace_c"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("runs %v, want %v", got, want)
	}
}

// TestRunNowNoDefault: without a usable default, a key's row still
// answers first (its allocation retired: 422, as on the start route); a
// start that needs the default is 503 and records no run.
func TestRunNowNoDefault(t *testing.T) {
	h := newHarness(t)
	id := newTrigger(t, h, nil)
	if r := runNowCall(h, user, id, "k1", ""); r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	h.SetSettings([]settings.Parameter{{Name: "allocation/retired", Type: "StringList", Value: "cloudflare-containers-standard-4"}})
	runs := func() int { return count(h, `"PK":{"S":"TRIGGER#`+id+`"}`, `"SK":{"S":"RUN#`) }
	if r := runNowCall(h, user, id, "k1", ""); r.Status != 422 || r.Code() != "sandbox_allocation_retired" || runs() != 1 {
		t.Errorf("the key's row: %d %s, %d runs", r.Status, r.Raw, runs())
	}
	if r := runNowCall(h, user, id, "k2", ""); r.Status != 503 || r.Code() != "service_unavailable" || runs() != 1 {
		t.Errorf("a new key: %d %s, %d runs", r.Status, r.Raw, runs())
	}
}

// TestRunNowOwnerFirst: with the settings unreadable, a trigger that is
// not the caller's is still 404, as if it did not exist; the caller's own
// is 503 and starts nothing.
func TestRunNowOwnerFirst(t *testing.T) {
	h := newHarness(t)
	id := newTrigger(t, h, nil)
	h.BreakSettings()
	if r := runNowCall(h, other, id, "", ""); r.Status != 404 {
		t.Errorf("another owner's: %d %s", r.Status, r.Raw)
	}
	if r := runNowCall(h, user, id, "", ""); r.Status != 503 || count(h, `"SESSION#`, `"METADATA"`) != 0 {
		t.Errorf("the caller's own: %d %s", r.Status, r.Raw)
	}
}

// TestRunNowRequests: what a start now asks of DynamoDB, by operation: a
// new session is the trigger's read, its environments' read and one
// transaction (the session, its row when keyed, the check of the trigger,
// the run, the prompt); a replay is the trigger's read, the environments'
// read, the transaction its row refuses (handing the row back), the row's
// session (rule 7) and the stored run's query.
func TestRunNowRequests(t *testing.T) {
	h, p := apitest.Faulty(t)
	h.Triggers.Now = func() time.Time { return clock }
	id := newTrigger(t, h, nil)
	for _, row := range []struct {
		rule string
		key  string
		want map[string]int
	}{
		{"without a key", "", map[string]int{"GetItem": 1, "BatchGetItem": 1, "TransactWriteItems": 1}},
		{"a new key", "k1", map[string]int{"GetItem": 1, "BatchGetItem": 1, "TransactWriteItems": 1}},
		{"its replay", "k1", map[string]int{"GetItem": 2, "BatchGetItem": 1, "TransactWriteItems": 1, "Query": 1}},
	} {
		var r apitest.Result
		if got := p.Requests(func() { r = runNowCall(h, user, id, row.key, "") }); !maps.Equal(got, row.want) {
			t.Errorf("%s: requests %v, want %v", row.rule, got, row.want)
		}
		if r.Status != 201 && r.Status != 200 {
			t.Fatalf("%s: %d %s", row.rule, r.Status, r.Raw)
		}
	}
}
