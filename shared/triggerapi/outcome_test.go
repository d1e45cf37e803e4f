package triggerapi_test

import (
	"encoding/base64"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
)

// outcomeAttr is an outcome's map as a report writes it on a session's
// metadata and on its run; code "" for none.
func outcomeAttr(status, code string) types.AttributeValue {
	m := map[string]types.AttributeValue{
		"status":     &types.AttributeValueMemberS{Value: status},
		"endedAt":    &types.AttributeValueMemberS{Value: "2026-11-30T10:40:00Z"},
		"reportedAt": &types.AttributeValueMemberS{Value: "2026-11-30T10:40:01Z"},
		"revision":   &types.AttributeValueMemberN{Value: "1"},
	}
	if code != "" {
		m["error"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"code": &types.AttributeValueMemberS{Value: code}, "message": &types.AttributeValueMemberS{Value: "It stopped."}}}
	}
	return &types.AttributeValueMemberM{Value: m}
}

// report writes an outcome as a report does: on the session and on the
// run of the trigger's slot (at minute, 10:minute) that started it.
func report(t *testing.T, h *apitest.Harness, id string, minute int, sessionID string, o types.AttributeValue) {
	t.Helper()
	h.SetItem("SESSION#"+sessionID, "METADATA", "metadata.outcome", o)
	h.SetItem("TRIGGER#"+id, fmt.Sprintf("RUN#2026-11-30T10:%02d:00.000Z", minute), "outcome", o)
}

// putRun writes a run's item, keyed RUN#<key>, straight into the table,
// as a writer of its time did: extra holds its further attributes in
// DynamoDB JSON (with a leading comma), "" for none.
func putRun(h *apitest.Harness, id, key, slot, extra string) {
	h.Put([]byte(`{"PK":{"S":"TRIGGER#` + id + `"},"SK":{"S":"RUN#` + key + `"},"triggerId":{"S":"` + id + `"},` +
		`"slot":{"S":"` + slot + `"},"status":{"S":"fired"},"sessionId":{"S":"workspace_1"},"recordedAt":{"S":"` + slot + `"},"expiresAt":{"N":"1900000000"}` + extra + `}`))
}

// slots are the slots of a page of runs (hh:mm; "now" for a start now's,
// at the start's own clock), with their outcome's status ("-" for none).
func slots(r apitest.Result) string {
	var got []string
	items, _ := r.Body["items"].([]any)
	for _, it := range items {
		run := it.(map[string]any)
		status := "-"
		if o, ok := run["outcome"].(map[string]any); ok {
			status = o["status"].(string)
		}
		at := run["slot"].(string)[11:16]
		if run["kind"] == "manual" {
			at = "now"
		}
		got = append(got, at+" "+status)
	}
	return strings.Join(got, ", ")
}

// TestRunsOutcome: each run shows its outcome as its report wrote it, null
// until then, for a run that started nothing and for one recorded before
// v7; outcome lists only the runs it names, running being the announced
// runs without an outcome (never a run recorded before v7); a start now's
// run has none; any other value of outcome is 400.
func TestRunsOutcome(t *testing.T) {
	h := newHarness(t)
	id := newTrigger(t, h, map[string]any{"schedule": map[string]any{"cron": "*/5 * * * *"}})
	putRun(h, id, "2026-11-30T09:00:00Z", "2026-11-30T09:00:00Z", "") // before v7: a session, no mark
	now := runNowCall(h, user, id, "", "")
	if run, _ := now.Body["run"].(map[string]any); now.Status != 201 || !strings.Contains(now.Raw, `"outcome":null`) || run["outcome"] != nil {
		t.Fatalf("a start now's run: %d %s", now.Status, now.Raw)
	}
	for minute := 5; minute <= 20; minute += 5 {
		if minute == 10 {
			h.SetTrigger(id, "repository.repo", &types.AttributeValueMemberS{Value: "not a repo"})
		}
		fireAt(t, h, clock.Add(time.Duration(minute)*time.Minute-30*time.Second))
		h.SetTrigger(id, "repository.repo", &types.AttributeValueMemberS{Value: "acme/app"})
	}
	sessions := map[string]string{}
	for _, it := range runsCall(h, user, id, "").Body["items"].([]any) {
		run := it.(map[string]any)
		if sid, ok := run["sessionId"].(string); ok {
			sessions[run["slot"].(string)[11:16]] = sid
		}
	}
	report(t, h, id, 5, sessions["10:05"], outcomeAttr("completed", ""))
	report(t, h, id, 15, sessions["10:15"], outcomeAttr("failed", "tests_failed"))
	r := runsCall(h, user, id, "")
	if got := slots(r); r.Status != 200 || got != "now -, 10:20 -, 10:15 failed, 10:10 -, 10:05 completed, 09:00 -" {
		t.Fatalf("%d %s: %s", r.Status, got, r.Raw)
	}
	if !strings.Contains(r.Raw, `"outcome":{"status":"failed","error":{"code":"tests_failed","message":"It stopped."},"endedAt":"2026-11-30T10:40:00Z","reportedAt":"2026-11-30T10:40:01Z"}`) {
		t.Errorf("the failed run's outcome: %s", r.Raw)
	}
	for _, row := range []struct{ filter, want string }{
		{"running", "now -, 10:20 -"}, // the start now's and the last slot's; not the run before v7, nor the refused slot
		{"completed", "10:05 completed"},
		{"failed", "10:15 failed"},
		{"interrupted", ""},
		{"timed_out", ""},
	} {
		t.Run("outcome="+row.filter, func(t *testing.T) {
			r := runsCall(h, user, id, "?outcome="+row.filter)
			if got := slots(r); r.Status != 200 || got != row.want || r.Body["nextCursor"] != nil {
				t.Errorf("%d %q, want %q: %s", r.Status, got, row.want, r.Raw)
			}
		})
	}
	for _, bad := range []string{"", "fired", "Running", "running,failed", "null", "%20running"} {
		t.Run("refused outcome="+bad, func(t *testing.T) {
			if r := runsCall(h, user, id, "?outcome="+bad); r.Status != 400 || r.Code() != "invalid_request" || !strings.Contains(r.Raw, "outcome must be") {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
		})
	}
}

// TestRunsOutcomePages: with outcome, a page reads at most ten runs for
// each it may hold, in one query, and goes on after the last run it read:
// it may hold fewer than limit, even none, with a cursor to follow.
func TestRunsOutcomePages(t *testing.T) {
	h, p := apitest.Faulty(t)
	h.Triggers.Now = func() time.Time { return clock }
	id := newTrigger(t, h, nil)
	at := func(i int) time.Time { return clock.Add(-time.Duration(i) * time.Minute) }
	key := func(i int) string { return at(i).Format("2006-01-02T15:04:05.000Z") }
	for i := range 25 { // run i, i minutes before now: interrupted at 0 and 20, running otherwise
		extra := `,"announced":{"BOOL":true}`
		if i == 0 || i == 20 {
			extra += `,"outcome":{"M":{"status":{"S":"interrupted"},"endedAt":{"S":"2026-11-30T09:59:00Z"},"reportedAt":{"S":"2026-11-30T09:59:00Z"},"revision":{"N":"1"}}}`
		}
		putRun(h, id, key(i), at(i).Format(time.RFC3339), extra)
	}
	query := "?limit=1&outcome=interrupted"
	var pages []string
	for n := 0; n < 6; n++ {
		var r apitest.Result
		requests := p.Requests(func() { r = runsCall(h, user, id, query) })
		want := map[string]int{"Query": 1}
		if n > 0 {
			want["GetItem"] = 1 // a later page reads the trigger first
		}
		if r.Status != 200 || !maps.Equal(requests, want) {
			t.Fatalf("page %d: %d, requests %v: %s", n, r.Status, requests, r.Raw)
		}
		c, _ := r.Body["nextCursor"].(string)
		after, _ := base64.RawURLEncoding.DecodeString(c)
		pages = append(pages, fmt.Sprintf("[%d] %s", len(r.Body["items"].([]any)), after))
		if c == "" {
			break
		}
		query = "?limit=1&outcome=interrupted&cursor=" + c
	}
	pos := func(i int) string { return `{"trigger":"` + id + `","after":"RUN#` + key(i) + `"}` }
	// 0 and the nine after it; ten runs, none interrupted; 20 and the four
	// left, the end.
	want := []string{"[1] " + pos(9), "[0] " + pos(19), "[1] "}
	if strings.Join(pages, "\n") != strings.Join(want, "\n") {
		t.Errorf("pages:\n%s\nwant:\n%s", strings.Join(pages, "\n"), strings.Join(want, "\n"))
	}
}

// TestLastOutcome: a trigger answers the outcome of its last session, as
// GET, the list and PATCH read it (one BatchGetItem more, for a whole
// page, none when no trigger on it has a last session); null for a
// trigger that never started one, a session that runs, and a session
// whose outcome does not decode (a warning on the line, never a 500).
func TestLastOutcome(t *testing.T) {
	h, p := apitest.Faulty(t)
	h.Triggers.Now = func() time.Time { return clock }
	cron := map[string]any{"schedule": map[string]any{"cron": "*/5 * * * *"}}
	ended, running, broken, never := newTrigger(t, h, cron), newTrigger(t, h, cron), newTrigger(t, h, cron), newTrigger(t, h, map[string]any{"active": false})
	fireAt(t, h, clock.Add(4*time.Minute+30*time.Second))
	last := func(id string) string {
		return h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: user}).Body["lastSessionId"].(string)
	}
	report(t, h, ended, 5, last(ended), outcomeAttr("interrupted", "cancelled"))
	brokenSession := last(broken)
	report(t, h, broken, 5, brokenSession, outcomeAttr("lost", ""))
	const interrupted = `"lastOutcome":{"status":"interrupted","error":{"code":"cancelled","message":"It stopped."},"endedAt":"2026-11-30T10:40:00Z","reportedAt":"2026-11-30T10:40:01Z"}`
	for _, row := range []struct {
		rule     string
		id       string
		want     string
		requests map[string]int
	}{
		{"the last session's outcome", ended, interrupted, map[string]int{"GetItem": 1, "BatchGetItem": 1}},
		{"a session that runs has none", running, `"lastOutcome":null`, map[string]int{"GetItem": 1, "BatchGetItem": 1}},
		{"a session that does not decode shows none", broken, `"lastOutcome":null`, map[string]int{"GetItem": 1, "BatchGetItem": 1}},
		{"no session, no read", never, `"lastOutcome":null`, map[string]int{"GetItem": 1}},
	} {
		t.Run(row.rule, func(t *testing.T) {
			var r apitest.Result
			requests := p.Requests(func() { r = h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + row.id, Claims: user}) })
			if r.Status != 200 || !strings.Contains(r.Raw, row.want) || !maps.Equal(requests, row.requests) {
				t.Errorf("GET: %d, requests %v: %s", r.Status, requests, r.Raw)
			}
			if r := patchCall(h, user, row.id, `{"prompt":"Changed."}`); r.Status != 200 || !strings.Contains(r.Raw, row.want) {
				t.Errorf("PATCH: %d %s", r.Status, r.Raw)
			}
		})
	}
	var page apitest.Result
	requests := p.Requests(func() { page = h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers?limit=4", Claims: user}) })
	if page.Status != 200 || strings.Count(page.Raw, interrupted) != 1 || strings.Count(page.Raw, `"lastOutcome":null`) != 3 ||
		!maps.Equal(requests, map[string]int{"Query": 1, "BatchGetItem": 1}) {
		t.Errorf("a page: requests %v: %s", requests, page.Raw)
	}
	if !strings.Contains(h.LastLog(), "a trigger's last session shows no outcome: session record "+brokenSession+" is invalid") {
		t.Errorf("no warning for the broken session: %s", h.LastLog())
	}
	h.CreateTrigger(t, other, body(nil))
	requests = p.Requests(func() { page = h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers", Claims: other}) })
	if page.Status != 200 || len(page.Body["items"].([]any)) != 1 || !maps.Equal(requests, map[string]int{"Query": 1}) {
		t.Errorf("a page without a last session: requests %v: %s", requests, page.Raw)
	}
}

// TestLastOutcomeAfterAWrite: a PATCH or a rotation whose write went in is
// answered 200 when the last outcome's read beside it fails, its
// lastOutcome null and a warning on the line, never a 503 that would hide
// the change (and a secret shown once); a GET whose read fails is 503.
func TestLastOutcomeAfterAWrite(t *testing.T) {
	h, p := apitest.Faulty(t)
	h.Triggers.Now = func() time.Time { return clock }
	id := newTrigger(t, h, map[string]any{"schedule": nil, "webhook": map[string]any{"verify": "github"}, "prompt": "Review {{event}}"})
	h.SetTrigger(id, "lastSessionId", &types.AttributeValueMemberS{Value: "workspace_00000000-0000-4000-8000-000000000001"})
	p.InjectEvery("BatchGetItem", 1, faultproxy.DynamoThrottle)
	defer p.ClearEvery()
	if r := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: user}); r.Status != 503 {
		t.Errorf("a GET: %d %s", r.Status, r.Raw)
	}
	r := h.Do(apitest.Call{Method: "PATCH", Path: "/v1/triggers/" + id, Claims: user, Body: `{"active":false}`})
	if r.Status != 200 || r.Body["active"] != false || !strings.Contains(r.Raw, `"lastOutcome":null`) || !strings.Contains(h.LastLog(), "last outcome could not be read") {
		t.Errorf("a PATCH: %d %s", r.Status, r.Raw)
	}
	r = h.Do(apitest.Call{Method: "POST", Path: "/v1/triggers/" + id + "/secret", Claims: user})
	if secret, _ := r.Body["webhook"].(map[string]any)["secret"].(string); r.Status != 200 || !strings.HasPrefix(secret, "whsec_") {
		t.Errorf("a rotation: %d %s", r.Status, r.Raw)
	}
}
