package triggerapi_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/shared/firing"
)

func runsCall(h *apitest.Harness, claims map[string]string, id, query string) apitest.Result {
	return h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id + "/runs" + query, Claims: claims})
}

// TestRuns: every slot that fired or failed is listed once, newest slot
// first, with its session or its error; pages follow the cursor; the
// first page is one query; another user's trigger, a deleted one, a bad
// limit or cursor are refused.
func TestRuns(t *testing.T) {
	h := newHarness(t)
	id := newTrigger(t, h, map[string]any{"schedule": map[string]any{"cron": "*/5 * * * *"}})
	slots := []time.Time{clock.Add(4*time.Minute + 30*time.Second), clock.Add(9*time.Minute + 30*time.Second), clock.Add(14*time.Minute + 30*time.Second)}
	fireAt(t, h, slots[0]) // 10:05 fires
	fireAt(t, h, slots[0]) // the same event again: a duplicate delivery adds no run
	h.SetTrigger(id, "repository.repo", &types.AttributeValueMemberS{Value: "not a repo"})
	fireAt(t, h, slots[1]) // 10:10 is refused: failed, invalid_request
	h.SetTrigger(id, "repository.repo", &types.AttributeValueMemberS{Value: "acme/app"})
	fireAt(t, h, slots[2]) // 10:15 fires

	r := runsCall(h, user, id, "")
	if r.Status != 200 || r.Requests != 1 {
		t.Fatalf("%d, %d requests: %s", r.Status, r.Requests, r.Raw)
	}
	items, _ := r.Body["items"].([]any)
	want := []struct{ slot, status, err string }{
		{"2026-11-30T10:15:00Z", "fired", ""}, {"2026-11-30T10:10:00Z", "failed", "invalid_request"}, {"2026-11-30T10:05:00Z", "fired", ""},
	}
	if len(items) != len(want) || r.Body["nextCursor"] != nil {
		t.Fatalf("%s", r.Raw)
	}
	for i, w := range want {
		run := items[i].(map[string]any)
		sid, _ := run["sessionId"].(string)
		if run["slot"] != w.slot || run["status"] != w.status || (w.err == "") != (run["error"] == nil) || w.err != "" && run["error"] != w.err ||
			(w.status == "failed") != (sid == "") || run["recordedAt"] == nil {
			t.Errorf("run %d: %v", i, run)
		}
	}
	// A page at a time.
	var got []string
	query := "?limit=1"
	for pages := 0; pages < 5; pages++ {
		r := runsCall(h, user, id, query)
		if want := 2; r.Status != 200 || pages > 0 && r.Requests != want { // a later page reads the trigger, then queries
			t.Fatalf("page %d: %d, %d requests: %s", pages, r.Status, r.Requests, r.Raw)
		}
		for _, it := range r.Body["items"].([]any) {
			got = append(got, it.(map[string]any)["slot"].(string))
		}
		c, ok := r.Body["nextCursor"].(string)
		if !ok {
			break
		}
		query = "?limit=1&cursor=" + c
	}
	if fmt.Sprint(got) != "[2026-11-30T10:15:00Z 2026-11-30T10:10:00Z 2026-11-30T10:05:00Z]" {
		t.Errorf("pages %v", got)
	}
	// A cursor of one trigger's runs is none for another's.
	second := newTrigger(t, h, nil)
	cursor := runsCall(h, user, id, "?limit=1").Body["nextCursor"].(string)
	if r := runsCall(h, user, second, "?cursor="+cursor); r.Status != 400 || r.Code() != "invalid_request" {
		t.Errorf("another trigger's cursor: %d %s", r.Status, r.Raw)
	}
	for _, row := range []struct {
		rule   string
		claims map[string]string
		id, q  string
		status int
	}{
		{"another user's trigger", other, id, "", 404},
		{"no such trigger", user, "trg_none", "", 404},
		{"a bad limit", user, id, "?limit=0", 400},
		{"a limit over 100", user, id, "?limit=101", 400},
		{"a bad cursor", user, id, "?cursor=bm90IGEgY3Vyc29y", 400},
		{"a bad id", user, "trg%20x", "", 400},
	} {
		t.Run(row.rule, func(t *testing.T) {
			if r := runsCall(h, row.claims, row.id, row.q); r.Status != row.status {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
		})
	}
	// A run that does not decode: a fault to the owner, nothing to anyone
	// else.
	h.Put([]byte(`{"PK":{"S":"TRIGGER#` + id + `"},"SK":{"S":"RUN#2026-11-30T10:20:00Z"},"triggerId":{"S":"` + id + `"},` +
		`"slot":{"S":"2026-11-30T10:20:00Z"},"status":{"S":"fired"},"recordedAt":{"S":"yesterday"},"expiresAt":{"N":"1800000000"}}`))
	if r := runsCall(h, user, id, ""); r.Status != 500 || r.Code() != "internal_error" {
		t.Errorf("a broken run, to its owner: %d %s", r.Status, r.Raw)
	}
	if r := runsCall(h, other, id, ""); r.Status != 404 {
		t.Errorf("a broken run, to another user: %d %s", r.Status, r.Raw)
	}
	if r := h.Do(apitest.Call{Method: "DELETE", Path: "/v1/triggers/" + id, Claims: user}); r.Status != 204 {
		t.Fatal(r.Raw)
	}
	if r := runsCall(h, user, id, ""); r.Status != 404 {
		t.Errorf("a deleted trigger's runs: %d %s", r.Status, r.Raw)
	}
}

// TestPatchRacesFiring: changes and firings of a due trigger at the same
// moment never undo each other: each round, a patch of the prompt and the
// firing of the slot run at once, and afterwards the trigger holds both
// the patch and the slot's run, recorded once, with its version moved on
// by each write.
func TestPatchRacesFiring(t *testing.T) {
	h := newHarness(t)
	id := newTrigger(t, h, map[string]any{"schedule": map[string]any{"cron": "*/5 * * * *"}})
	for round := range 12 {
		slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC).Add(time.Duration(round) * 5 * time.Minute)
		prompt := fmt.Sprintf("Round %d.", round)
		var wg sync.WaitGroup
		var patched apitest.Result
		wg.Go(func() { patched = patchCall(h, user, id, `{"prompt":"`+prompt+`"}`) })
		wg.Go(func() { fireAt(t, h, slot) })
		wg.Wait()
		if patched.Status != 200 {
			t.Fatalf("round %d: %d %s", round, patched.Status, patched.Raw)
		}
		got := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: user}).Body
		if got["prompt"] != prompt || got["lastRunAt"] != slot.Format(time.RFC3339) || got["nextRunAt"] != slot.Add(5*time.Minute).Format(time.RFC3339) {
			t.Errorf("round %d: a write was lost: %v", round, got)
		}
		if v := version(t, h, id); v != 1+2*(round+1) {
			t.Errorf("round %d: version %d", round, v)
		}
	}
	r := runsCall(h, user, id, "?limit=100")
	if n := len(r.Body["items"].([]any)); n != 12 || strings.Count(r.Raw, `"status":"fired"`) != 12 {
		t.Errorf("%d runs: %s", n, r.Raw)
	}
}

// TestPauseRacesFiring: a pause and the firing of the due slot at the same
// moment: either the slot fired before the pause (its run recorded, the
// trigger moved on) or the pause came first (no run); the trigger ends
// paused either way, and is not due after.
func TestPauseRacesFiring(t *testing.T) {
	for round := range 8 {
		h := newHarness(t)
		id := newTrigger(t, h, map[string]any{"schedule": map[string]any{"cron": "*/5 * * * *"}})
		slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
		var wg sync.WaitGroup
		var paused apitest.Result
		wg.Go(func() { paused = patchCall(h, user, id, `{"active":false}`) })
		wg.Go(func() { fireAt(t, h, slot) })
		wg.Wait()
		got := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: user}).Body
		runs := len(runsCall(h, user, id, "").Body["items"].([]any))
		fired := got["lastRunAt"] == slot.Format(time.RFC3339)
		if paused.Status != 200 || got["active"] != false || fired != (runs == 1) || runs > 1 {
			t.Errorf("round %d: %d runs, %v", round, runs, got)
		}
		if sum := fireAt(t, h, slot.Add(time.Hour)); sum.Due != 0 {
			t.Errorf("round %d: paused, yet due: %+v", round, sum)
		}
	}
}

// TestChangeMeetsFiring: the two interleavings of a change and a firing,
// made to happen. A firing that lands between a patch's read and its
// write: the patch is applied again to the fired trigger, and both stay.
// A patch that lands between the firing's read and its write: the firing
// judges the trigger again as changed (a pause: not due, nothing fired; a
// new prompt: fired with it), and both stay.
func TestChangeMeetsFiring(t *testing.T) {
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	setup := func(t *testing.T) (*apitest.Harness, *faultproxy.Proxy, string) {
		h, p := apitest.Faulty(t)
		h.Triggers.Now = func() time.Time { return clock }
		return h, p, newTrigger(t, h, map[string]any{"schedule": map[string]any{"cron": "*/5 * * * *"}})
	}
	t.Run("a firing between the patch's read and write", func(t *testing.T) {
		h, p, id := setup(t)
		p.Inject("PutItem", 1, faultproxy.Before(func() { fireAt(t, h, slot) }))
		r := patchCall(h, user, id, `{"prompt":"Changed."}`)
		// The read, the write the firing moved, the read again, the write,
		// and the fired session's outcome.
		if r.Status != 200 || r.Body["prompt"] != "Changed." || r.Body["lastRunAt"] != "2026-11-30T10:05:00Z" || r.Requests != 5 {
			t.Errorf("%d, %d requests: %s", r.Status, r.Requests, r.Raw)
		}
		if v := version(t, h, id); v != 3 {
			t.Errorf("version %d", v)
		}
	})
	t.Run("a pause between the firing's read and write", func(t *testing.T) {
		h, p, id := setup(t)
		p.Inject("TransactWriteItems", 1, faultproxy.Before(func() {
			if r := patchCall(h, user, id, `{"active":false}`); r.Status != 200 {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
		}))
		if sum := fireAt(t, h, slot); sum.Due != 0 {
			t.Errorf("fired a paused trigger: %+v", sum)
		}
		got := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: user}).Body
		if got["active"] != false || got["lastRunAt"] != nil || len(runsCall(h, user, id, "").Body["items"].([]any)) != 0 {
			t.Errorf("%v", got)
		}
	})
	t.Run("a change that mends the schedule before the firing stops the trigger", func(t *testing.T) {
		h, p, id := setup(t)
		h.SetTrigger(id, "cron", &types.AttributeValueMemberS{Value: "0 9 * * L"}) // an older writer's, no longer valid
		p.Inject("TransactWriteItems", 1, faultproxy.Before(func() {
			if r := patchCall(h, user, id, `{"schedule":{"cron":"*/5 * * * *"}}`); r.Status != 200 {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
		}))
		if sum := fireAt(t, h, slot); sum != (firing.Summary{Due: 1, Fired: 1}) {
			t.Errorf("%+v", sum)
		}
		got := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: user}).Body
		if got["active"] != true || got["lastRunStatus"] == "failed" || member(got, "schedule.cron") != `"*/5 * * * *"` {
			t.Errorf("the change was undone: %v", got)
		}
	})
	t.Run("a new prompt between the firing's read and write", func(t *testing.T) {
		h, p, id := setup(t)
		p.Inject("TransactWriteItems", 1, faultproxy.Before(func() {
			if r := patchCall(h, user, id, `{"prompt":"Changed."}`); r.Status != 200 {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
		}))
		if sum := fireAt(t, h, slot); sum.Fired != 1 {
			t.Errorf("%+v", sum)
		}
		got := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: user}).Body
		if got["prompt"] != "Changed." || got["lastRunAt"] != "2026-11-30T10:05:00Z" || len(runsCall(h, user, id, "").Body["items"].([]any)) != 1 {
			t.Errorf("%v", got)
		}
		if v := version(t, h, id); v != 3 {
			t.Errorf("version %d", v)
		}
	})
}

// TestPatchFaults: a fault in a change or a listing of runs is a 503 with
// Retry-After that changes nothing; a change whose answer was lost is
// found written when it is applied again; a trigger that keeps changing
// under the change is a 503 once the change has tried three times.
func TestPatchFaults(t *testing.T) {
	for _, row := range []struct {
		rule   string
		inject func(h *apitest.Harness, p *faultproxy.Proxy, id string)
		call   func(h *apitest.Harness, id string) apitest.Result
		status int
	}{
		{"the read is throttled", func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			p.Inject("GetItem", 4, faultproxy.DynamoThrottle)
		}, func(h *apitest.Harness, id string) apitest.Result {
			return patchCall(h, user, id, `{"prompt":"Changed."}`)
		}, 503},
		{"the write is throttled", func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			p.Inject("PutItem", 4, faultproxy.DynamoThrottle)
		}, func(h *apitest.Harness, id string) apitest.Result {
			return patchCall(h, user, id, `{"prompt":"Changed."}`)
		}, 503},
		{"the trigger keeps changing", func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			for v := range 3 {
				p.Inject("PutItem", 1, faultproxy.Before(func() {
					if err := h.UpdateTrigger(id, "version", &types.AttributeValueMemberN{Value: fmt.Sprint(10 + v)}); err != nil {
						t.Error(err)
					}
				}))
			}
		}, func(h *apitest.Harness, id string) apitest.Result {
			return patchCall(h, user, id, `{"prompt":"Changed."}`)
		}, 503},
		{"the runs' query is throttled", func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			p.Inject("Query", 4, faultproxy.DynamoThrottle)
		}, func(h *apitest.Harness, id string) apitest.Result { return runsCall(h, user, id, "") }, 503},
		{"the write's answer is lost", func(h *apitest.Harness, p *faultproxy.Proxy, id string) {
			p.Inject("PutItem", 1, faultproxy.DropAfter)
		}, func(h *apitest.Harness, id string) apitest.Result {
			return patchCall(h, user, id, `{"prompt":"Changed."}`)
		}, 200},
	} {
		t.Run(row.rule, func(t *testing.T) {
			h, p := apitest.Faulty(t)
			h.Triggers.Now = func() time.Time { return clock }
			id := newTrigger(t, h, nil)
			before := h.Snapshot()
			row.inject(h, p, id)
			r := row.call(h, id)
			if r.Status != row.status {
				t.Fatalf("%d %s", r.Status, r.Raw)
			}
			switch {
			case r.Status == 503 && (r.Code() != "service_unavailable" || r.Headers["Retry-After"] == ""):
				t.Errorf("%v %s", r.Headers, r.Raw)
			case r.Status == 503 && row.rule != "the trigger keeps changing" && h.Snapshot() != before:
				t.Error("a fault changed the table")
			case r.Status == 200 && (r.Body["prompt"] != "Changed." || version(t, h, id) != 2):
				t.Errorf("version %d: %s", version(t, h, id), r.Raw)
			}
		})
	}
}

// TestRunsEarlierCursor: a cursor an earlier release wrote, of the last
// run's slot (and a manual run's id), still pages from the key it names,
// so that a listing crossing a deploy goes on; one that mixes both shapes
// is refused.
func TestRunsEarlierCursor(t *testing.T) {
	h := newHarness(t)
	id := newTrigger(t, h, nil)
	for _, slot := range []string{"2026-11-30T10:20:00Z", "2026-11-30T10:15:00Z", "2026-11-30T10:10:00Z"} {
		h.Put([]byte(`{"PK":{"S":"TRIGGER#` + id + `"},"SK":{"S":"RUN#` + slot + `"},"triggerId":{"S":"` + id + `"},` +
			`"slot":{"S":"` + slot + `"},"status":{"S":"fired"},"sessionId":{"S":"workspace_1"},"recordedAt":{"S":"` + slot + `"},"expiresAt":{"N":"1900000000"}}`))
	}
	cursor := func(members string) string {
		return "?cursor=" + base64.RawURLEncoding.EncodeToString([]byte(`{"trigger":"`+id+`",`+members+`}`))
	}
	r := runsCall(h, user, id, cursor(`"slot":"2026-11-30T10:20:00Z"`))
	items, _ := r.Body["items"].([]any)
	if r.Status != 200 || len(items) != 2 || items[0].(map[string]any)["slot"] != "2026-11-30T10:15:00Z" {
		t.Errorf("an earlier release's cursor: %d %s", r.Status, r.Raw)
	}
	for _, bad := range []string{`"slot":"2026-11-30T10:20:00Z","after":"RUN#2026-11-30T10:20:00Z"`, `"slot":"yesterday"`, `"run":"workspace_1"`} {
		if r := runsCall(h, user, id, cursor(bad)); r.Status != 400 {
			t.Errorf("cursor %s: %d %s", bad, r.Status, r.Raw)
		}
	}
}
