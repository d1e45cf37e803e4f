package triggerapi_test

import (
	"encoding/json/jsontext"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/shared/settings"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

var (
	user      = map[string]string{"sub": "u1", "org_ids": "[o1 o2]"}
	other     = map[string]string{"sub": "u2", "org_ids": "[o1]"}
	triggerID = regexp.MustCompile(`^trg_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	// Monday 2026-11-30 10:00:30 UTC.
	clock = time.Date(2026, 11, 30, 10, 0, 30, 0, time.UTC)
)

func newHarness(t *testing.T) *apitest.Harness {
	h := apitest.New(t, nil)
	h.Triggers.Now = func() time.Time { return clock }
	return h
}

// baseBody is a valid trigger body.
var baseBody = map[string]any{
	"schedule":   map[string]any{"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"},
	"repository": map[string]any{"type": "github", "repo": "acme/app"},
	"agent":      map[string]any{"mode": "code", "model": "anthropic/claude"},
	"prompt":     "Update the dependencies.",
}

// body is the base body with members set (nil deletes one).
func body(set map[string]any) string { return apitest.Body(baseBody, set) }

func create(h *apitest.Harness, claims map[string]string, b string) apitest.Result {
	return h.Do(apitest.Call{Method: "POST", Path: "/v1/triggers", Claims: claims, Body: b})
}

// TestCreate: 201 with Location and every member of a trigger; unknown
// values are null, webhook among them; active defaults to true and the zone to UTC; nextRunAt
// is the first slot strictly after creation; a kilo object comes back as
// its name and a byoc object as itself.
func TestCreate(t *testing.T) {
	h := newHarness(t)
	r := create(h, user, body(map[string]any{"orgId": "o1"}))
	if r.Status != 201 || !triggerID.MatchString(r.Body["triggerId"].(string)) || r.Headers["Location"] != "/v1/triggers/"+r.Body["triggerId"].(string) {
		t.Fatalf("%d %v %s", r.Status, r.Headers, r.Raw)
	}
	want := map[string]any{
		"orgId": "o1", "active": true, "prompt": "Update the dependencies.",
		"schedule":          map[string]any{"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"},
		"repository":        map[string]any{"type": "github", "repo": "acme/app", "branch": nil},
		"agent":             map[string]any{"mode": "code", "model": "anthropic/claude", "variant": nil},
		"sandboxAllocation": nil, "createdAt": "2026-11-30T10:00:30Z",
		"nextRunAt": "2026-12-01T08:00:00Z", // 09:00 in Berlin, the next weekday
		"lastRunAt": nil, "lastSessionId": nil, "lastRunStatus": nil, "lastError": nil,
		"webhook":       nil, // a scheduled trigger
		"environmentId": nil,
		"lastOutcome":   nil, // a new trigger's
	}
	for k, v := range want {
		if fmt.Sprint(r.Body[k]) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v", k, r.Body[k], v)
		}
	}
	if len(r.Body) != len(want)+1 {
		t.Errorf("members %v", r.Body)
	}
	for _, row := range []struct {
		rule string
		set  map[string]any
		key  string
		want string
	}{
		{"the zone defaults to UTC", map[string]any{"schedule": map[string]any{"cron": "0 * * * *"}}, "schedule", "map[cron:0 * * * * timezone:UTC]"},
		{"nextRunAt is strictly after creation", map[string]any{"schedule": map[string]any{"cron": "* * * * *"}}, "nextRunAt", "2026-11-30T10:01:00Z"},
		{"active false is kept", map[string]any{"active": false}, "active", "false"},
		{"active null is the default", map[string]any{"active": nil}, "active", "true"},
		{"a kilo object is stored as its name", map[string]any{"sandboxAllocation": map[string]any{"provider": map[string]any{"id": "vercel", "account": "kilo"}, "instanceType": "small"}}, "sandboxAllocation", "vercel-small"},
		{"a byoc object stays an object", map[string]any{"sandboxAllocation": map[string]any{"provider": map[string]any{"id": "vercel", "account": "byoc"}, "instanceType": "large"}}, "sandboxAllocation", "map[instanceType:large provider:map[account:byoc id:vercel]]"},
		{"a name", map[string]any{"sandboxAllocation": "vercel-large"}, "sandboxAllocation", "vercel-large"},
		{"a null allocation is none", map[string]any{"sandboxAllocation": jsontext.Value("null"), "orgId": jsontext.Value("null")}, "sandboxAllocation", "<nil>"},
		{"a gitlab url and a branch", map[string]any{"repository": map[string]any{"type": "gitlab", "url": "https://gitlab.com/g/p.git", "branch": "dev"}}, "repository", "map[branch:dev type:gitlab url:https://gitlab.com/g/p.git]"},
		{"a token marker in the prompt is allowed", map[string]any{"prompt": "rotate ghp_ tokens"}, "prompt", "rotate ghp_ tokens"},
	} {
		t.Run(row.rule, func(t *testing.T) {
			r := create(h, user, body(row.set))
			if r.Status != 201 || fmt.Sprint(r.Body[row.key]) != row.want {
				t.Errorf("%d %s = %v, want %s", r.Status, row.key, r.Body[row.key], row.want)
			}
			got := h.Do(apitest.Call{Method: "GET", Path: r.Headers["Location"], Claims: user})
			if got.Status != 200 || got.Raw != r.Raw {
				t.Errorf("read back %d %s\nwant %s", got.Status, got.Raw, r.Raw)
			}
		})
	}
}

// TestCreateRefused: each check of the contract, in its order; a refused
// trigger writes nothing.
func TestCreateRefused(t *testing.T) {
	h := newHarness(t)
	long := strings.Repeat("é", 100001)
	cron := func(c string) map[string]any { return map[string]any{"schedule": map[string]any{"cron": c}} }
	zone := func(z string) map[string]any {
		return map[string]any{"schedule": map[string]any{"cron": "0 9 * * *", "timezone": z}}
	}
	for _, row := range []struct {
		rule   string
		claims map[string]string
		body   string
		status int
		code   string
	}{
		{"not JSON", user, "{", 400, "invalid_request"},
		{"not an object", user, "[]", 400, "invalid_request"},
		{"an unknown member", user, body(map[string]any{"x": 1}), 400, "invalid_request"},
		{"an unknown schedule member", user, body(map[string]any{"schedule": map[string]any{"cron": "* * * * *", "seconds": 1}}), 400, "invalid_request"},
		{"a repeated member", user, `{"prompt":"a","prompt":"b"}`, 400, "invalid_request"},
		{"a member in another case", user, strings.Replace(body(nil), `"prompt"`, `"Prompt"`, 1), 400, "invalid_request"},
		{"invalid UTF-8 in the prompt", user, strings.Replace(body(map[string]any{"prompt": "PROMPT"}), "PROMPT", "Triage \xff", 1), 400, "invalid_request"},
		{"invalid UTF-8 in the branch", user, strings.Replace(body(map[string]any{"repository": map[string]any{"type": "github", "repo": "a/b", "branch": "BR"}}), "BR", "m\xc3", 1), 400, "invalid_request"},
		{"invalid UTF-8 in a member name", user, strings.Replace(body(nil), `"prompt"`, "\"pr\xffompt\"", 1), 400, "invalid_request"},
		{"a lone surrogate escape", user, strings.Replace(body(map[string]any{"prompt": "PROMPT"}), "PROMPT", `\udc00`, 1), 400, "invalid_request"},
		{"nested too deep", user, strings.Replace(body(nil), `{`, `{"x":`+strings.Repeat("[", 10001)+strings.Repeat("]", 10001)+`,`, 1), 400, "invalid_request"},
		{"prompt is required", user, body(map[string]any{"prompt": nil}), 400, "invalid_request"},
		{"prompt may not be empty", user, body(map[string]any{"prompt": ""}), 400, "invalid_request"},
		{"prompt is at most 100000 code points", user, body(map[string]any{"prompt": long}), 400, "invalid_request"},
		{"schedule is required", user, body(map[string]any{"schedule": nil}), 400, "invalid_request"},
		{"repository is required", user, body(map[string]any{"repository": nil}), 400, "invalid_request"},
		{"agent is required", user, body(map[string]any{"agent": nil}), 400, "invalid_request"},
		{"agent.model is at most 200", user, body(map[string]any{"agent": map[string]any{"mode": "code", "model": strings.Repeat("m", 201)}}), 400, "invalid_request"},
		{"a bad repo", user, body(map[string]any{"repository": map[string]any{"type": "github", "repo": "nope"}}), 400, "invalid_request"},
		{"a URL with user info", user, body(map[string]any{"repository": map[string]any{"type": "git", "url": "https://me:pw@x.org/r.git"}}), 400, "invalid_request"},
		{"a token in a string member", user, body(map[string]any{"agent": map[string]any{"mode": "code", "model": "glpat-x"}}), 400, "invalid_request"},
		{"a token in the allocation, before check 1", user, body(map[string]any{"sandboxAllocation": "ghp_x"}), 400, "invalid_request"},
		{"a token in the zone", user, body(map[string]any{"schedule": map[string]any{"cron": "0 9 * * *", "timezone": "ghp_x"}}), 400, "invalid_request"},
		{"active must be a boolean", user, body(map[string]any{"active": "yes"}), 400, "invalid_request"},
		{"an allocation of another JSON type", user, body(map[string]any{"sandboxAllocation": 4}), 400, "invalid_request"},
		{"an invalid orgId", user, body(map[string]any{"orgId": "o 1"}), 400, "invalid_request"},
		{"an empty orgId", user, body(map[string]any{"orgId": ""}), 400, "invalid_request"},
		{"L in a cron", user, body(cron("0 9 L * *")), 400, "invalid_request"},
		{"? in a cron", user, body(cron("0 9 ? * 1")), 400, "invalid_request"},
		{"# in a cron", user, body(cron("0 9 * * 1#2")), 400, "invalid_request"},
		{"W in a cron", user, body(cron("0 9 15W * *")), 400, "invalid_request"},
		{"a seconds field", user, body(cron("0 0 9 * * *")), 400, "invalid_request"},
		{"a descriptor", user, body(cron("@daily")), 400, "invalid_request"},
		{"no time within five years", user, body(cron("0 0 30 2 *")), 400, "invalid_request"},
		{"an empty zone", user, body(zone("")), 400, "invalid_request"},
		{"the Local zone", user, body(zone("Local")), 400, "invalid_request"},
		{"an unknown zone", user, body(zone("Mars/Olympus")), 400, "invalid_request"},
		{"a control character in agent.model", user, body(map[string]any{"agent": map[string]any{"mode": "code", "model": "a\x00b"}}), 400, "invalid_request"},
		{"the machine's localtime", user, body(zone("localtime")), 400, "invalid_request"},
		{"the machine's posixrules", user, body(zone("posixrules")), 400, "invalid_request"},
		{"a zone of the machine's right/ tree", user, body(zone("right/UTC")), 400, "invalid_request"},
		{"a zone of the machine's posix/ tree", user, body(zone("posix/Europe/Berlin")), 400, "invalid_request"},
		{"400 before 403", user, body(map[string]any{"orgId": "o9", "schedule": map[string]any{"cron": "L"}}), 400, "invalid_request"},
		{"an org the caller is not in", user, body(map[string]any{"orgId": "o9"}), 403, "forbidden"},
		{"403 before check 1", user, body(map[string]any{"orgId": "o9", "sandboxAllocation": "nope"}), 403, "forbidden"},
		{"check 1: an unknown name", user, body(map[string]any{"sandboxAllocation": "nope"}), 400, "invalid_sandbox_allocation"},
		{"check 1: an object with extra keys", user, body(map[string]any{"sandboxAllocation": map[string]any{"provider": map[string]any{"id": "vercel", "account": "kilo"}, "instanceType": "small", "x": 1}}), 400, "invalid_sandbox_allocation"},
		{"check 3: the retired shared allocation", user, body(map[string]any{"sandboxAllocation": "cloudflare-shared"}), 422, "sandbox_allocation_retired"},
		{"check 4: the retired runtime", user, body(map[string]any{"sandboxAllocation": "cloudflare-single"}), 422, "sandbox_runtime_retired"},
		{"a malformed sub claim", map[string]string{"sub": "bad id"}, body(nil), 401, "unauthorized"},
	} {
		t.Run(row.rule, func(t *testing.T) {
			before := len(h.Items())
			r := create(h, row.claims, row.body)
			if r.Status != row.status || r.Code() != row.code {
				t.Errorf("%d %s, want %d %s", r.Status, r.Raw, row.status, row.code)
			}
			if n := len(h.Items()); n != before {
				t.Errorf("a refused trigger wrote %d items", n-before)
			}
		})
	}
}

// TestCreateSelectionChecks: checks 5 and 6 with the owner of the trigger
// (the org when there is one), and naming the default skips them.
func TestCreateSelectionChecks(t *testing.T) {
	h := newHarness(t)
	h.SetSettings([]settings.Parameter{
		{Name: "selection/owners", Type: "StringList", Value: "o1"},
		{Name: "allocation/selectable", Type: "StringList", Value: "vercel-small,cloudflare-containers-standard-4"},
	})
	for _, row := range []struct {
		rule   string
		set    map[string]any
		status int
		code   string
	}{
		{"check 5: the user may not select", map[string]any{"sandboxAllocation": "vercel-small"}, 403, "sandbox_selection_disabled"},
		{"the org may select", map[string]any{"orgId": "o1", "sandboxAllocation": "vercel-small"}, 201, ""},
		{"check 6: not selectable", map[string]any{"orgId": "o1", "sandboxAllocation": "vercel-large"}, 422, "sandbox_allocation_unavailable"},
		{"check 6: a byoc object follows vercel-<type>", map[string]any{"orgId": "o1", "sandboxAllocation": map[string]any{"provider": map[string]any{"id": "vercel", "account": "byoc"}, "instanceType": "large"}}, 422, "sandbox_allocation_unavailable"},
		{"the default skips checks 5 and 6", map[string]any{"sandboxAllocation": "cloudflare-containers-standard-4"}, 201, ""},
	} {
		t.Run(row.rule, func(t *testing.T) {
			r := create(h, user, body(row.set))
			if r.Status != row.status || r.Code() != row.code {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
		})
	}
}

// TestTriggerLimit: at most 100 triggers per owner, the org when orgId is
// given, else the user; the allocation checks come first; a delete makes
// room.
func TestTriggerLimit(t *testing.T) {
	h := newHarness(t)
	var last string
	for i := range 100 {
		r := create(h, user, body(nil))
		if r.Status != 201 {
			t.Fatalf("trigger %d: %d %s", i, r.Status, r.Raw)
		}
		last = r.Headers["Location"]
	}
	if r := create(h, user, body(nil)); r.Status != 422 || r.Code() != "trigger_limit_reached" {
		t.Fatalf("101st: %d %s", r.Status, r.Raw)
	}
	if r := create(h, user, body(map[string]any{"sandboxAllocation": "cloudflare-shared"})); r.Code() != "sandbox_allocation_retired" {
		t.Errorf("allocation checks come before the limit: %s", r.Raw)
	}
	// A page is 50 by default, at most 100.
	if r := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers", Claims: user}); len(r.Body["items"].([]any)) != 50 || r.Body["nextCursor"] == nil {
		t.Errorf("the default page: %d items, cursor %v", len(r.Body["items"].([]any)), r.Body["nextCursor"])
	}
	if r := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers?limit=100", Claims: user}); len(r.Body["items"].([]any)) != 100 || r.Body["nextCursor"] != nil {
		t.Errorf("a page of 100: %d items, cursor %v", len(r.Body["items"].([]any)), r.Body["nextCursor"])
	}
	// The org is another owner, whose 100 its users share.
	for i := range 100 {
		claims := user
		if i%2 == 1 {
			claims = other
		}
		if r := create(h, claims, body(map[string]any{"orgId": "o1"})); r.Status != 201 {
			t.Fatalf("org trigger %d: %d %s", i, r.Status, r.Raw)
		}
	}
	if r := create(h, other, body(map[string]any{"orgId": "o1"})); r.Code() != "trigger_limit_reached" {
		t.Errorf("the org's 101st: %d %s", r.Status, r.Raw)
	}
	if r := create(h, other, body(nil)); r.Status != 201 {
		t.Errorf("another user is another owner: %d %s", r.Status, r.Raw)
	}
	if r := h.Do(apitest.Call{Method: "DELETE", Path: last, Claims: user}); r.Status != 204 || r.Raw != "" {
		t.Fatalf("delete: %d %s", r.Status, r.Raw)
	}
	if r := create(h, user, body(nil)); r.Status != 201 {
		t.Errorf("after a delete: %d %s", r.Status, r.Raw)
	}
}

// routeCase is a call and the status and code it must get.
type routeCase struct {
	rule, method, path string
	claims             map[string]string
	status             int
	code               string
}

// do makes the call and checks its status and code.
func (c routeCase) do(t *testing.T, h *apitest.Harness) apitest.Result {
	t.Helper()
	r := h.Do(apitest.Call{Method: c.method, Path: c.path, Claims: c.claims})
	if r.Status != c.status || r.Code() != c.code {
		t.Errorf("%d %s", r.Status, r.Raw)
	}
	return r
}

// TestReadAndDelete: a trigger is its owner's only: anyone else, or the
// owner once out of its org, gets 404, as for an unknown id; a deleted
// trigger is gone.
func TestReadAndDelete(t *testing.T) {
	h := newHarness(t)
	mine := create(h, user, body(nil)).Headers["Location"]
	orgs := create(h, user, body(map[string]any{"orgId": "o2"})).Headers["Location"]
	for _, row := range []routeCase{
		{"the owner reads it", "GET", mine, user, 200, ""},
		{"another user gets 404", "GET", mine, other, 404, "not_found"},
		{"an admin gets 404 too", "GET", mine, map[string]string{"sub": "u9", "scope": "cloud-agent:admin"}, 404, "not_found"},
		{"out of the org: 404", "GET", orgs, map[string]string{"sub": "u1", "org_ids": "[o1]"}, 404, "not_found"},
		{"an unknown id", "GET", "/v1/triggers/trg_none", user, 404, "not_found"},
		{"a bad id", "GET", "/v1/triggers/trg.bad", user, 400, "invalid_request"},
		{"another method", "PUT", mine, user, 405, "method_not_allowed"},
		{"another user cannot delete it", "DELETE", mine, other, 404, "not_found"},
		{"out of the org, the owner cannot delete it", "DELETE", orgs, map[string]string{"sub": "u1"}, 404, "not_found"},
		{"the owner deletes it", "DELETE", mine, user, 204, ""},
		{"then it is gone", "GET", mine, user, 404, "not_found"},
		{"and cannot be deleted twice", "DELETE", mine, user, 404, "not_found"},
		{"the org's trigger is still there", "GET", orgs, user, 200, ""},
	} {
		t.Run(row.rule, func(t *testing.T) {
			r := row.do(t, h)
			if row.status == 405 && r.Headers["Allow"] != "DELETE, GET, PATCH" {
				t.Errorf("Allow %q", r.Headers["Allow"])
			}
		})
	}
}

// TestList: the caller's own triggers, newest first (also within one
// second), a page at a time with
// an opaque cursor; limit 1 to 100, 50 by default; a bad limit or cursor
// is 400.
func TestList(t *testing.T) {
	h := newHarness(t)
	var want []string
	for i := range 7 {
		// All in one second: newest first is by the instant, not the
		// createdAt shown.
		h.Triggers.Now = func() time.Time { return clock.Add(time.Duration(i) * time.Millisecond) }
		org := map[string]any{}
		if i%3 == 0 {
			org["orgId"] = "o2" // u1 leaves o2 below
		}
		id := create(h, user, body(org)).Body["triggerId"].(string)
		if i%3 != 0 {
			want = append([]string{id}, want...)
		}
		create(h, other, body(nil))
	}
	claims := map[string]string{"sub": "u1", "org_ids": "[o1]"}
	var got []string
	path := "/v1/triggers?limit=2"
	for range 10 {
		r := h.Do(apitest.Call{Method: "GET", Path: path, Claims: claims})
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		for _, it := range r.Body["items"].([]any) {
			got = append(got, it.(map[string]any)["triggerId"].(string))
		}
		next, _ := r.Body["nextCursor"].(string)
		if next == "" {
			if _, ok := r.Body["nextCursor"]; !ok {
				t.Error("nextCursor left out")
			}
			break
		}
		path = "/v1/triggers?limit=2&cursor=" + next
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pages %v, want %v", got, want)
	}
	all := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers", Claims: user})
	if n := len(all.Body["items"].([]any)); n != 7 || all.Body["nextCursor"] != nil {
		t.Errorf("default page: %d items, cursor %v", n, all.Body["nextCursor"])
	}
	none := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers", Claims: map[string]string{"sub": "u3"}})
	if none.Status != 200 || none.Raw != `{"items":[],"nextCursor":null}` {
		t.Errorf("no triggers: %s", none.Raw)
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=abc", "limit=", "limit=05", "cursor=nope", "cursor=e30"} {
		if r := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers?" + q, Claims: user}); r.Status != 400 || r.Code() != "invalid_request" {
			t.Errorf("%s: %d %s", q, r.Status, r.Raw)
		}
	}
}

// TestFaults: a storage fault that outlasts the SDK's retries is 503 with
// Retry-After, and a refused create writes nothing.
func TestFaults(t *testing.T) {
	for _, row := range []struct {
		rule, op, method, path string
	}{
		{"create", "TransactWriteItems", "POST", "/v1/triggers"},
		{"list", "Query", "GET", "/v1/triggers"},
		{"get", "GetItem", "GET", "/v1/triggers/trg_x"},
		{"delete", "GetItem", "DELETE", "/v1/triggers/trg_x"},
	} {
		t.Run(row.rule, func(t *testing.T) {
			h, p := apitest.Faulty(t)
			p.Inject(row.op, 4, faultproxy.DynamoThrottle)
			b := ""
			if row.method == "POST" {
				b = body(nil)
			}
			r := h.Do(apitest.Call{Method: row.method, Path: row.path, Claims: user, Body: b})
			if r.Status != 503 || r.Code() != "service_unavailable" || r.Headers["Retry-After"] == "" {
				t.Errorf("%d %v %s", r.Status, r.Headers, r.Raw)
			}
			if n := len(h.Items()); n != 0 {
				t.Errorf("%d items written", n)
			}
		})
	}
}

// TestUndecodableTrigger: a stored trigger that does not decode is, to
// anyone but its owner, one that does not exist; to its owner it is an
// internal error to read, and it can be deleted.
func TestUndecodableTrigger(t *testing.T) {
	h := newHarness(t)
	id := create(h, user, body(nil)).Body["triggerId"].(string)
	h.SetTrigger(id, "active", &types.AttributeValueMemberS{Value: "yes"})
	path := "/v1/triggers/" + id
	for _, row := range []routeCase{
		{"another user reads nothing", "GET", path, other, 404, "not_found"},
		{"another user lists nothing of it", "GET", "/v1/triggers", map[string]string{"sub": "u2"}, 200, ""},
		{"another user cannot delete it", "DELETE", path, other, 404, "not_found"},
		{"the owner reads an internal error", "GET", path, user, 500, "internal_error"},
		{"the owner deletes it", "DELETE", path, user, 204, ""},
		{"then it is gone", "GET", path, user, 404, "not_found"},
	} {
		t.Run(row.rule, func(t *testing.T) {
			if r := row.do(t, h); strings.Contains(r.Raw, "yes") {
				t.Errorf("the stored value shows: %s", r.Raw)
			}
		})
	}
}

// TestLostAnswer: a create whose answer was lost after the table applied
// it is retried by the SDK and answered 201, with one trigger and its
// owner's count at one.
func TestLostAnswer(t *testing.T) {
	h, p := apitest.Faulty(t)
	h.Triggers.Now = func() time.Time { return clock }
	p.Inject("TransactWriteItems", 1, faultproxy.DropAfter)
	if r := create(h, user, body(nil)); r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	items := h.Items()
	var count string
	for _, it := range items {
		if strings.Contains(it, `"TRIGGERS#USER#u1"`) {
			count = it
		}
	}
	if len(items) != 2 || !strings.Contains(count, `"triggers":{"N":"1"}`) {
		t.Errorf("items %v", items)
	}
}
