package start_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
)

// secretValue is an environment's secret: never in an answer, a log line
// or the table in clear.
const secretValue = "npm_Zq8vK2mP4xR7tY1wB3nC6dF9gH0jL5sA"

// environment creates an environment of claims with the members set over
// a base (a plain and a secret variable, a setup command) and returns its
// id.
func environment(t *testing.T, h *apitest.Harness, claims map[string]string, set map[string]any) string {
	t.Helper()
	base := map[string]any{
		"name":          "Node",
		"variables":     map[string]any{"NODE_ENV": map[string]any{"value": "production"}, "NPM_TOKEN": map[string]any{"value": secretValue, "secret": true}},
		"setupCommands": []any{"npm ci"},
	}
	return h.CreateEnvironment(t, claims, apitest.Body(base, set))
}

// envOf is the environment a start or a lookup answered, as
// "id name version", or "null".
func envOf(r apitest.Result) string {
	e, ok := r.Body["environment"].(map[string]any)
	if !ok {
		return fmt.Sprint(r.Body["environment"])
	}
	return fmt.Sprint(e["environmentId"], " ", e["name"], " ", e["version"])
}

// snapshots are the sessions' environment snapshots in the table.
func snapshots(h *apitest.Harness) []string {
	var out []string
	for _, it := range h.Items() {
		if strings.Contains(it, `"SK":{"S":"ENV_SNAPSHOT"}`) {
			out = append(out, it)
		}
	}
	return out
}

// TestStartInEnvironment: a start runs in the environment it names (the
// user's own, or the session's org's), else the user's default, else the
// org's; it answers and the lookup shows {environmentId, name, version},
// never a value; the session keeps the environment as it was, its secret
// as ciphertext; the environment's saved allocation applies after an
// explicit one, and a code-review start ignores it. Two DynamoDB
// requests with or without an environment.
func TestStartInEnvironment(t *testing.T) {
	h := apitest.New(t, nil)
	none := post(h, user, body(nil))
	if none.Status != 201 || envOf(none) != "<nil>" || none.Requests != 2 {
		t.Fatalf("without one: %d %s (%d requests)", none.Status, none.Raw, none.Requests)
	}
	orgDefault := environment(t, h, other, map[string]any{"orgId": "o1", "name": "Org", "default": true, "variables": nil})
	if r := post(h, user, body(map[string]any{"orgId": "o1"})); envOf(r) != orgDefault+" Org 1" || r.Requests != 2 {
		t.Errorf("the org's default: %s (%d requests)", r.Raw, r.Requests)
	}
	if r := post(h, user, body(nil)); envOf(r) != "<nil>" {
		t.Errorf("the org's default, without the org: %s", r.Raw)
	}
	own := environment(t, h, user, map[string]any{"default": true, "sandboxAllocation": "vercel-small"})
	r := post(h, user, body(map[string]any{"orgId": "o1", "initialTurn": map[string]any{"prompt": "Fix the build."}}))
	if r.Status != 201 || envOf(r) != own+" Node 1" || sandbox(r)["allocation"] != "vercel-small" || r.Requests != 2 {
		t.Fatalf("the user's default goes first, with its allocation: %d %s (%d requests)", r.Status, r.Raw, r.Requests)
	}
	look := h.Do(apitest.Call{Method: "GET", Path: "/v1/sessions/" + r.Body["sessionId"].(string) + "/allocation", Claims: user})
	if envOf(look) != envOf(r) {
		t.Errorf("the lookup shows %s", look.Raw)
	}
	snap := snapshots(h)
	if len(snap) != 2 || !strings.Contains(strings.Join(snap, ""), `"sealed":{"B":`) {
		t.Errorf("snapshots %v", snap)
	}
	for _, where := range []string{h.Snapshot(), r.Raw, look.Raw, strings.Join(h.Logs(), "\n")} {
		if strings.Contains(where, secretValue) {
			t.Errorf("the secret in clear: %s", where)
		}
	}
	if r := post(h, user, body(map[string]any{"runtime": map[string]any{"sandboxAllocation": "vercel-large"}})); sandbox(r)["allocation"] != "vercel-large" || envOf(r) != own+" Node 1" {
		t.Errorf("an explicit allocation goes first: %s", r.Raw)
	}
	if r := post(h, user, body(map[string]any{"runtime": map[string]any{"sandboxKind": "code-review"}})); sandbox(r)["allocation"] != nil || envOf(r) != own+" Node 1" {
		t.Errorf("code-review ignores the environment's allocation: %s", r.Raw)
	}
	named := environment(t, h, other, map[string]any{"orgId": "o1", "name": "Named", "variables": nil})
	if r := post(h, user, body(map[string]any{"orgId": "o1", "environmentId": named})); envOf(r) != named+" Named 1" {
		t.Errorf("a named org environment: %s", r.Raw)
	}
	// A change of the environment reaches the next session, never one
	// already started.
	if p := h.Do(apitest.Call{Method: "PATCH", Path: "/v1/environments/" + own, Claims: user, Body: `{"name":"Node 22"}`}); p.Status != 200 {
		t.Fatalf("%d %s", p.Status, p.Raw)
	}
	if r := post(h, user, body(nil)); envOf(r) != own+" Node 22 2" {
		t.Errorf("after a change: %s", r.Raw)
	}
	if again := h.Do(apitest.Call{Method: "GET", Path: look.Headers["Location"], Claims: user}); again.Status == 200 && envOf(again) != envOf(look) {
		t.Errorf("a started session's environment changed: %s", again.Raw)
	}
	if look2 := h.Do(apitest.Call{Method: "GET", Path: "/v1/sessions/" + r.Body["sessionId"].(string) + "/allocation", Claims: user}); envOf(look2) != own+" Node 1" {
		t.Errorf("a started session's environment changed: %s", look2.Raw)
	}
}

// TestEnvironmentNotFound: a named environment the user does not own (an
// org's without the org, another user's, none) is 422
// environment_not_found and writes nothing; judged only when a session is
// created: a key whose row exists replays whatever became of the
// environment, and the fingerprint covers environmentId as sent.
func TestEnvironmentNotFound(t *testing.T) {
	h := apitest.New(t, nil)
	orgs := environment(t, h, other, map[string]any{"orgId": "o1", "variables": nil})
	theirs := environment(t, h, other, map[string]any{"name": "Theirs", "variables": nil})
	before := h.Snapshot()
	for _, b := range []string{
		body(map[string]any{"environmentId": orgs}), body(map[string]any{"orgId": "o2", "environmentId": orgs}),
		body(map[string]any{"environmentId": theirs}), body(map[string]any{"environmentId": "env_gone"}),
	} {
		if r := post(h, user, b); r.Status != 422 || r.Code() != "environment_not_found" {
			t.Errorf("%s: %d %s", b, r.Status, r.Raw)
		}
	}
	if h.Snapshot() != before {
		t.Error("a refused start wrote")
	}
	keyed := body(map[string]any{"orgId": "o1", "environmentId": orgs, "operationKey": "k1"})
	first := post(h, user, keyed)
	if first.Status != 201 {
		t.Fatalf("%d %s", first.Status, first.Raw)
	}
	if d := h.Do(apitest.Call{Method: "DELETE", Path: "/v1/environments/" + orgs, Claims: other}); d.Status != 204 {
		t.Fatalf("%d %s", d.Status, d.Raw)
	}
	if again := post(h, user, keyed); again.Status != 200 || again.Body["sessionId"] != first.Body["sessionId"] || envOf(again) != envOf(first) {
		t.Errorf("the replay after the delete: %d %s", again.Status, again.Raw)
	}
	if other := post(h, user, body(map[string]any{"orgId": "o1", "environmentId": theirs, "operationKey": "k1"})); other.Code() != "operation_key_payload_mismatch" {
		t.Errorf("another environmentId under the key: %d %s", other.Status, other.Raw)
	}
	if r := post(h, user, body(map[string]any{"environmentId": "not.an.id"})); r.Code() != "invalid_request" {
		t.Errorf("a bad id: %d %s", r.Status, r.Raw)
	}
}

// TestEnvironmentFallback: an environment's saved allocation is a saved
// value: retired, or failing its checks now, the session starts on the
// effective default, with a warning on the line, counted
// (EnvironmentFallbacks), never an error.
func TestEnvironmentFallback(t *testing.T) {
	h := apitest.New(t, nil)
	id := environment(t, h, user, map[string]any{"default": true, "variables": nil})
	h.SetItem("ENVIRONMENT#"+id, "ENVIRONMENT", "sandboxAllocation", &types.AttributeValueMemberS{Value: "cloudflare-shared"})
	h.SetItem("DEFAULTENV#u#u1", "DEFAULTENV", "sandboxAllocation", &types.AttributeValueMemberS{Value: "cloudflare-shared"})
	r := post(h, user, body(nil))
	if r.Status != 201 || sandbox(r)["allocation"] != "cloudflare-containers-standard-4" || envOf(r) != id+" Node 1" {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	if line := h.LastLog(); !strings.Contains(line, "saved allocation falls back") || !strings.Contains(line, `"EnvironmentFallbacks":1`) {
		t.Errorf("no warning, or not counted: %s", line)
	}
}

// TestStartsShareAnEnvironment: 50 concurrent starts on one org default
// all start: no start's transaction holds a condition on an environment.
func TestStartsShareAnEnvironment(t *testing.T) {
	h := apitest.New(t, nil)
	id := environment(t, h, other, map[string]any{"orgId": "o1", "default": true})
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[string]int{}
	for range 50 {
		wg.Go(func() {
			r := post(h, user, body(map[string]any{"orgId": "o1"}))
			mu.Lock()
			defer mu.Unlock()
			statuses[fmt.Sprint(r.Status, " ", envOf(r))]++
		})
	}
	wg.Wait()
	if want := fmt.Sprint(201, " ", id, " Node 1"); statuses[want] != 50 {
		t.Errorf("%v", statuses)
	}
}

// TestRequestsPerPath: what each way of a start costs in DynamoDB
// requests (contract v7, Budget): 2 without a key, whether or not an
// environment is named or found (a default or none); 1 for a named one
// refused, which writes nothing; a replay 3.
func TestRequestsPerPath(t *testing.T) {
	h := apitest.New(t, nil)
	named := environment(t, h, user, map[string]any{"name": "Named", "variables": nil})
	for _, row := range []struct {
		rule     string
		body     string
		status   int
		requests int
	}{
		{"no environment", body(nil), 201, 2},
		{"a named one", body(map[string]any{"environmentId": named}), 201, 2},
		{"a named one not found: refused, nothing written", body(map[string]any{"environmentId": "env_gone"}), 422, 1},
		{"the org's default", body(map[string]any{"orgId": "o1"}), 201, 2},
		{"a new key", body(map[string]any{"operationKey": "k1", "environmentId": named}), 201, 2},
		{"its replay", body(map[string]any{"operationKey": "k1", "environmentId": named}), 200, 3},
	} {
		if row.rule == "the org's default" {
			environment(t, h, other, map[string]any{"orgId": "o1", "name": "Org", "default": true, "variables": nil})
		}
		if r := post(h, user, row.body); r.Status != row.status || r.Requests != row.requests {
			t.Errorf("%s: %d, %d requests, want %d, %d", row.rule, r.Status, r.Requests, row.status, row.requests)
		}
	}
	environment(t, h, user, map[string]any{"name": "Default", "default": true, "variables": nil})
	if r := post(h, user, body(nil)); r.Status != 201 || r.Requests != 2 || envOf(r) == "<nil>" {
		t.Errorf("the user's default: %d, %d requests", r.Status, r.Requests)
	}
}

// TestSharedEraEnvironments: environments imported from the seed system
// that save cloudflare-shared (by name, or as a request naming it, the
// latter here a default pointer) answer the allocation as stored, and
// start on the effective default.
func TestSharedEraEnvironments(t *testing.T) {
	h := apitest.New(t, nil)
	for _, f := range []string{"environment-shared-era", "environment-request-shared"} {
		data, err := os.ReadFile("../store/testdata/" + f + ".json")
		if err != nil {
			t.Fatal(err)
		}
		h.Put(data)
	}
	const era = "env_2b0e6c1a-7f3d-4a58-9c41-8e5d2f6a1b37"
	if r := h.Do(apitest.Call{Method: "GET", Path: "/v1/environments/" + era, Claims: user}); r.Status != 200 || r.Body["sandboxAllocation"] != "cloudflare-shared" {
		t.Errorf("as stored: %d %s", r.Status, r.Raw)
	}
	for _, b := range []string{body(map[string]any{"orgId": "o1", "environmentId": era}), body(nil)} {
		r := post(h, user, b)
		if r.Status != 201 || sandbox(r)["allocation"] != "cloudflare-containers-standard-4" || envOf(r) == "<nil>" {
			t.Errorf("%s: %d %s", b, r.Status, r.Raw)
		}
	}
}
