package triggerapi_test

import (
	"context"
	"encoding/json/v2"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/settings"
)

func patchCall(h *apitest.Harness, claims map[string]string, id, b string) apitest.Result {
	return h.Do(apitest.Call{Method: "PATCH", Path: "/v1/triggers/" + id, Claims: claims, Body: b,
		Headers: map[string]string{"Content-Type": "application/merge-patch+json"}})
}

// newTrigger creates a trigger of user with the base body and the members
// set, and returns its id.
func newTrigger(t *testing.T, h *apitest.Harness, set map[string]any) string {
	t.Helper()
	return h.CreateTrigger(t, user, body(set))
}

// member is a member of a view at a dotted path, as JSON.
func member(v map[string]any, path string) string {
	var x any = v
	for _, k := range strings.Split(path, ".") {
		m, _ := x.(map[string]any)
		x = m[k]
	}
	b, _ := json.Marshal(x, json.Deterministic(true))
	return string(b)
}

// TestPatch: a merge patch changes what it names and nothing else, an
// object member by member, null removing an optional member; the next run
// moves only for a changed schedule or a resumed trigger, to the first
// slot strictly after the change; a patch that changes nothing writes
// nothing; every change is one read and one write.
func TestPatch(t *testing.T) {
	for _, row := range []struct {
		rule, patch string
		create      map[string]any
		want        map[string]string // member path: JSON
		writes      bool
	}{
		{"{} changes nothing", `{}`, nil, map[string]string{"prompt": `"Update the dependencies."`, "nextRunAt": `"2026-12-01T08:00:00Z"`}, false},
		{"the same value changes nothing", `{"prompt":"Update the dependencies.","active":true}`, nil, map[string]string{"prompt": `"Update the dependencies."`}, false},
		{"the prompt", `{"prompt":"Triage."}`, nil, map[string]string{"prompt": `"Triage."`, "nextRunAt": `"2026-12-01T08:00:00Z"`}, true},
		{"pause: the next run stays", `{"active":false}`, nil, map[string]string{"active": `false`, "nextRunAt": `"2026-12-01T08:00:00Z"`}, true},
		{"a changed cron: the first slot after the change", `{"schedule":{"cron":"*/5 * * * *"}}`, nil,
			map[string]string{"schedule": `{"cron":"*/5 * * * *","timezone":"Europe/Berlin"}`, "nextRunAt": `"2026-11-30T10:05:00Z"`}, true},
		{"the zone removed: UTC", `{"schedule":{"timezone":null}}`, nil,
			map[string]string{"schedule": `{"cron":"0 9 * * 1-5","timezone":"UTC"}`, "nextRunAt": `"2026-12-01T09:00:00Z"`}, true},
		{"a branch, merged into the repository", `{"repository":{"branch":"dev"}}`, nil,
			map[string]string{"repository": `{"branch":"dev","repo":"acme/app","type":"github"}`}, true},
		{"the branch removed", `{"repository":{"branch":null}}`, map[string]any{"repository": map[string]any{"type": "github", "repo": "acme/app", "branch": "dev"}},
			map[string]string{"repository": `{"branch":null,"repo":"acme/app","type":"github"}`}, true},
		{"another kind of repository", `{"repository":{"type":"gitlab","repo":null,"url":"https://gitlab.com/acme/app.git"}}`, nil,
			map[string]string{"repository": `{"branch":null,"type":"gitlab","url":"https://gitlab.com/acme/app.git"}`}, true},
		{"the variant removed", `{"agent":{"variant":null}}`, map[string]any{"agent": map[string]any{"mode": "code", "model": "m", "variant": "fast"}},
			map[string]string{"agent": `{"mode":"code","model":"m","variant":null}`}, true},
		{"an allocation saved", `{"sandboxAllocation":"vercel-small"}`, nil, map[string]string{"sandboxAllocation": `"vercel-small"`}, true},
		{"a kilo object saved by its name", `{"sandboxAllocation":{"provider":{"id":"vercel","account":"kilo"},"instanceType":"large"}}`, nil,
			map[string]string{"sandboxAllocation": `"vercel-large"`}, true},
		{"null clears the saved allocation", `{"sandboxAllocation":null}`, map[string]any{"sandboxAllocation": "vercel-small"},
			map[string]string{"sandboxAllocation": `null`}, true},
		{"a byoc object merged member by member", `{"sandboxAllocation":{"instanceType":"large"}}`,
			map[string]any{"sandboxAllocation": map[string]any{"provider": map[string]any{"id": "vercel", "account": "byoc"}, "instanceType": "small"}},
			map[string]string{"sandboxAllocation": `{"instanceType":"large","provider":{"account":"byoc","id":"vercel"}}`}, true},
	} {
		t.Run(row.rule, func(t *testing.T) {
			h := newHarness(t)
			id := newTrigger(t, h, row.create)
			before := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: user})
			r := patchCall(h, user, id, row.patch)
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Raw)
			}
			for path, want := range row.want {
				if got := member(r.Body, path); got != want {
					t.Errorf("%s = %s, want %s", path, got, want)
				}
			}
			for k, v := range before.Body { // everything else as it was
				if _, named := row.want[k]; !named && !strings.Contains(row.patch, `"`+k+`"`) && member(r.Body, k) != member(before.Body, k) {
					t.Errorf("%s changed: %v, was %v", k, r.Body[k], v)
				}
			}
			after := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: user})
			if fmt.Sprint(after.Body) != fmt.Sprint(r.Body) {
				t.Errorf("stored %v\nanswered %v", after.Body, r.Body)
			}
			wantRequests := 1
			if row.writes {
				wantRequests = 2
			}
			if r.Requests != wantRequests {
				t.Errorf("%d DynamoDB requests, want %d", r.Requests, wantRequests)
			}
			if v := version(t, h, id); row.writes && v != 2 || !row.writes && v != 1 {
				t.Errorf("version %d", v)
			}
		})
	}
}

// version is the stored trigger's version attribute.
func version(t *testing.T, h *apitest.Harness, id string) int {
	t.Helper()
	for _, it := range h.Items() {
		if strings.Contains(it, `"PK":{"S":"TRIGGER#`+id+`"}`) && strings.Contains(it, `"SK":{"S":"TRIGGER"}`) {
			var item map[string]map[string]any
			_ = json.Unmarshal([]byte(it), &item)
			var v int
			fmt.Sscan(fmt.Sprint(item["version"]["N"]), &v)
			return v
		}
	}
	t.Fatalf("no trigger %s", id)
	return 0
}

// TestPatchRefused: a patch that is not a valid change is refused with the
// contract's code, and changes nothing.
func TestPatchRefused(t *testing.T) {
	h := newHarness(t)
	id := newTrigger(t, h, nil)
	before := h.Snapshot()
	for _, row := range []struct {
		rule, patch, code string
		status            int
		detail            string
	}{
		{"orgId is not patchable", `{"orgId":"o1"}`, "invalid_request", 400, "orgId"},
		{"an unknown member", `{"Prompt":"x"}`, "invalid_request", 400, "Prompt"},
		{"null for the prompt", `{"prompt":null}`, "invalid_request", 400, "prompt cannot be removed"},
		{"null for the schedule", `{"schedule":null}`, "invalid_request", 400, "schedule cannot be removed"},
		{"null for the cron", `{"schedule":{"cron":null}}`, "invalid_request", 400, "schedule.cron cannot be removed"},
		{"null for the model", `{"agent":{"model":null}}`, "invalid_request", 400, "agent.model cannot be removed"},
		{"null for active", `{"active":null}`, "invalid_request", 400, "active cannot be removed"},
		{"the repo removed from a github repository", `{"repository":{"repo":null}}`, "invalid_request", 400, "repository.repo"},
		{"an unknown member of an object", `{"agent":{"speed":"fast"}}`, "invalid_request", 400, "agent.speed"},
		{"an unknown member removed", `{"agent":{"speed":null}}`, "invalid_request", 400, "agent.speed is not a known member"},
		{"an unknown member of the allocation's provider, removed", `{"sandboxAllocation":{"provider":{"region":null}}}`, "invalid_sandbox_allocation", 400, "sandboxAllocation.provider.region"},
		{"check 1: an allocation object with an extra key", `{"sandboxAllocation":{"provider":{"id":"vercel","account":"kilo"},"instanceType":"small","x":1}}`, "invalid_sandbox_allocation", 400, ""},
		{"400 before check 1: a wrong type", `{"sandboxAllocation":{"x":1},"active":"yes"}`, "invalid_request", 400, "active"},
		{"400 before check 1: a required member removed", `{"sandboxAllocation":{"x":1},"prompt":null}`, "invalid_request", 400, "prompt cannot be removed"},
		{"check 1: an extra key in its provider", `{"sandboxAllocation":{"provider":{"id":"vercel","account":"kilo","x":1},"instanceType":"small"}}`, "invalid_sandbox_allocation", 400, ""},
		{"a wrong type", `{"active":"yes"}`, "invalid_request", 400, "active"},
		{"a number out of range", `{"active":1e400}`, "invalid_request", 400, "out of range"},
		{"a number out of range, nested", `{"schedule":{"cron":-1e999}}`, "invalid_request", 400, "out of range"},
		{"two removed: the first judged", `{"prompt":null,"active":null}`, "invalid_request", 400, "active cannot be removed"},
		{"an empty prompt", `{"prompt":""}`, "invalid_request", 400, "prompt"},
		{"a secret", `{"repository":{"branch":"ghp_abc"}}`, "invalid_request", 400, ""},
		{"a bad cron", `{"schedule":{"cron":"0 9 * *"}}`, "invalid_request", 400, ""},
		{"a bad zone", `{"schedule":{"timezone":"Local"}}`, "invalid_request", 400, ""},
		{"not an object", `[]`, "invalid_request", 400, ""},
		{"not JSON", `{"prompt":`, "invalid_request", 400, ""},
		{"a repeated member", `{"prompt":"a","prompt":"b"}`, "invalid_request", 400, ""},
		{"invalid UTF-8", "{\"prompt\":\"\xff\"}", "invalid_request", 400, "UTF-8"},
		{"check 1: not an allocation", `{"sandboxAllocation":"vercel-huge"}`, "invalid_sandbox_allocation", 400, ""},
		{"check 1: another type", `{"sandboxAllocation":4}`, "invalid_request", 400, "sandboxAllocation"},
		{"check 3: retired", `{"sandboxAllocation":"cloudflare-shared"}`, "sandbox_allocation_retired", 422, "one sandbox now serves one workspace"},
		{"check 4: retired provider", `{"sandboxAllocation":"cloudflare-single"}`, "sandbox_runtime_retired", 422, ""},
		{"isolated-standard: its provider is retired", `{"sandboxAllocation":"isolated-standard"}`, "sandbox_runtime_retired", 422, ""},
	} {
		t.Run(row.rule, func(t *testing.T) {
			r := patchCall(h, user, id, row.patch)
			if r.Status != row.status || r.Code() != row.code || !strings.Contains(fmt.Sprint(r.Body["detail"]), row.detail) {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
			if after := h.Snapshot(); after != before {
				t.Errorf("the table changed:\n%s\n%s", before, after)
			}
		})
	}
	for _, row := range []struct {
		rule    string
		claims  map[string]string
		id, ct  string
		status  int
		code    string
		headers map[string]string
	}{
		{"another user's trigger", other, id, "application/json", 404, "not_found", nil},
		{"no such trigger", user, "trg_none", "application/json", 404, "not_found", nil},
		{"a bad id", user, "trg%20x", "application/json", 400, "invalid_request", nil},
		{"another content type", user, id, "text/plain", 400, "invalid_request", nil},
		{"application/json with a charset", user, id, "application/json; charset=utf-8", 200, "", nil},
	} {
		t.Run(row.rule, func(t *testing.T) {
			r := h.Do(apitest.Call{Method: "PATCH", Path: "/v1/triggers/" + row.id, Claims: row.claims, Body: `{}`,
				Headers: map[string]string{"Content-Type": row.ct}})
			if r.Status != row.status || r.Code() != row.code {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
		})
	}
}

// TestPatchSelection: allocation checks 3, 5 and 6 under the settings, on
// an allocation the patch names; a saved one it does not name is kept,
// whatever the settings say of it now.
func TestPatchSelection(t *testing.T) {
	for _, row := range []struct {
		rule   string
		params []settings.Parameter
		code   string
		status int
	}{
		{"check 5: selection not enabled", []settings.Parameter{{Name: "selection/owners", Type: "StringList", Value: "-"}}, "sandbox_selection_disabled", 403},
		{"check 6: not selectable", []settings.Parameter{{Name: "allocation/selectable", Type: "StringList", Value: "vercel-small"}}, "sandbox_allocation_unavailable", 422},
		{"check 3: retired since it was saved", []settings.Parameter{{Name: "allocation/retired", Type: "StringList", Value: "vercel-large"}}, "sandbox_allocation_retired", 422},
	} {
		t.Run(row.rule, func(t *testing.T) {
			h := newHarness(t)
			id := newTrigger(t, h, map[string]any{"sandboxAllocation": "vercel-large"})
			h.SetSettings(row.params)
			if r := patchCall(h, user, id, `{"sandboxAllocation":"vercel-large"}`); r.Status != row.status || r.Code() != row.code {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
			// Not named, the saved allocation is not judged, and stays.
			if r := patchCall(h, user, id, `{"prompt":"No allocation named: no check."}`); r.Status != 200 || r.Body["sandboxAllocation"] != "vercel-large" {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
		})
	}
}

// fireAt invokes the harness's firing with the scheduled event of at, its
// clock at at.
func fireAt(t *testing.T, h *apitest.Harness, at time.Time) firing.Summary {
	t.Helper()
	f := *h.Firing
	f.Now = func() time.Time { return at }
	sum, err := f.Handle(context.Background(), events.EventBridgeEvent{Source: "aws.events", DetailType: "Scheduled Event", Time: at})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestPatchPauseResume: a paused trigger is never due; resumed, it runs
// next at its first slot strictly after the change, its paused slots not
// caught up.
func TestPatchPauseResume(t *testing.T) {
	h := newHarness(t)
	id := newTrigger(t, h, map[string]any{"schedule": map[string]any{"cron": "*/5 * * * *"}})
	if r := patchCall(h, user, id, `{"active":false}`); r.Status != 200 || r.Body["nextRunAt"] != "2026-11-30T10:05:00Z" {
		t.Fatalf("pause: %d %s", r.Status, r.Raw)
	}
	// An hour of slots go by, paused: none fires.
	if sum := fireAt(t, h, clock.Add(time.Hour)); sum.Due != 0 {
		t.Errorf("a paused trigger fired: %+v", sum)
	}
	h.Triggers.Now = func() time.Time { return clock.Add(time.Hour + 2*time.Minute) } // 11:02:30
	r := patchCall(h, user, id, `{"active":true}`)
	if r.Status != 200 || r.Body["active"] != true || r.Body["nextRunAt"] != "2026-11-30T11:05:00Z" {
		t.Fatalf("resume: %d %s", r.Status, r.Raw)
	}
	if sum := fireAt(t, h, clock.Add(time.Hour+5*time.Minute)); sum.Fired != 1 || sum.Skipped != 0 {
		t.Errorf("resumed: %+v", sum)
	}
}

// TestPatchDaylightSaving: a schedule changed before a daylight-saving
// change runs next as the schedule says across it: a skipped wall time at
// the first minute after the gap, a repeated one at its first occurrence.
func TestPatchDaylightSaving(t *testing.T) {
	for _, row := range []struct {
		rule, cron string
		at         time.Time
		next       string
	}{
		// Europe/Berlin springs forward at 02:00 on 2027-03-28.
		{"a skipped time", "30 2 * * *", time.Date(2027, 3, 27, 12, 0, 0, 0, time.UTC), "2027-03-28T01:00:00Z"},
		// and falls back at 03:00 on 2026-10-25 (02:30 happens twice).
		{"a repeated time", "30 2 * * *", time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC), "2026-10-25T00:30:00Z"},
	} {
		t.Run(row.rule, func(t *testing.T) {
			h := newHarness(t)
			id := newTrigger(t, h, nil)
			h.Triggers.Now = func() time.Time { return row.at }
			r := patchCall(h, user, id, `{"schedule":{"cron":"`+row.cron+`"}}`)
			if r.Status != 200 || r.Body["nextRunAt"] != row.next {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
		})
	}
}
