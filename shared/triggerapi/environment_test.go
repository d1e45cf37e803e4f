package triggerapi_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
)

// newEnvironment creates an environment of claims named name, with the
// members set.
func newEnvironment(t *testing.T, h *apitest.Harness, claims map[string]string, name string, set map[string]any) string {
	t.Helper()
	return h.CreateEnvironment(t, claims, apitest.Body(map[string]any{"name": name}, set))
}

// uses is the count of triggers that the environment's item holds.
func uses(h *apitest.Harness, id string) string {
	for _, it := range h.Items() {
		if strings.Contains(it, `"PK":{"S":"ENVIRONMENT#`+id+`"}`) {
			if _, after, ok := strings.Cut(it, `"triggers":{"N":"`); ok {
				n, _, _ := strings.Cut(after, `"`)
				return n
			}
			return "none"
		}
	}
	return "gone"
}

// TestTriggerEnvironment: a trigger names an environment its user owns
// (their own, or its org's), checked after the allocation checks and
// before the owner's limit; the environment counts the triggers that name
// it, in their writes' transactions, so that it cannot be deleted while
// one does; a PATCH moves the count, null clears it.
func TestTriggerEnvironment(t *testing.T) {
	h := newHarness(t)
	own := newEnvironment(t, h, user, "Own", nil)
	orgs := newEnvironment(t, h, other, "Org's", map[string]any{"orgId": "o1"})
	theirs := newEnvironment(t, h, other, "Theirs", nil)

	id := newTrigger(t, h, map[string]any{"environmentId": own})
	if got := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: user}); got.Body["environmentId"] != own || uses(h, own) != "1" {
		t.Fatalf("%s, counted %s", got.Raw, uses(h, own))
	}
	before := h.Snapshot()
	for _, row := range []struct {
		rule string
		set  map[string]any
		code string
	}{
		{"another user's", map[string]any{"environmentId": theirs}, "environment_not_found"},
		{"an org's, the trigger without it", map[string]any{"environmentId": orgs}, "environment_not_found"},
		{"none such", map[string]any{"environmentId": "env_gone"}, "environment_not_found"},
		{"a bad id", map[string]any{"environmentId": "not.an.id"}, "invalid_request"},
		{"the allocation first", map[string]any{"environmentId": theirs, "sandboxAllocation": "cloudflare-shared"}, "sandbox_allocation_retired"},
	} {
		if r := create(h, user, body(row.set)); r.Code() != row.code {
			t.Errorf("%s: %d %s", row.rule, r.Status, r.Raw)
		}
	}
	if h.Snapshot() != before {
		t.Error("a refused create wrote")
	}
	inOrg := newTrigger(t, h, map[string]any{"orgId": "o1", "environmentId": orgs})
	if d := h.Do(apitest.Call{Method: "DELETE", Path: "/v1/environments/" + own, Claims: user}); d.Code() != "environment_in_use" || uses(h, own) != "1" {
		t.Errorf("deleting one in use: %d %s", d.Status, d.Raw)
	}
	patch := func(id, b string) apitest.Result {
		return h.Do(apitest.Call{Method: "PATCH", Path: "/v1/triggers/" + id, Claims: user, Body: b})
	}
	if r := patch(id, `{"environmentId":"`+theirs+`"}`); r.Code() != "environment_not_found" || uses(h, own) != "1" {
		t.Errorf("patched to another user's: %d %s", r.Status, r.Raw)
	}
	second := newEnvironment(t, h, user, "Second", nil)
	if r := patch(id, `{"environmentId":"`+second+`"}`); r.Status != 200 || r.Body["environmentId"] != second || uses(h, own) != "0" || uses(h, second) != "1" {
		t.Errorf("moved: %d %s, counts %s %s", r.Status, r.Raw, uses(h, own), uses(h, second))
	}
	if d := h.Do(apitest.Call{Method: "DELETE", Path: "/v1/environments/" + own, Claims: user}); d.Status != 204 {
		t.Errorf("deleting one no longer named: %d %s", d.Status, d.Raw)
	}
	if r := patch(id, `{"environmentId":null}`); r.Status != 200 || r.Body["environmentId"] != nil || uses(h, second) != "0" {
		t.Errorf("cleared: %d %s, count %s", r.Status, r.Raw, uses(h, second))
	}
	if d := h.Do(apitest.Call{Method: "DELETE", Path: "/v1/triggers/" + inOrg, Claims: user}); d.Status != 204 || uses(h, orgs) != "0" {
		t.Errorf("a trigger deleted: %d, count %s", d.Status, uses(h, orgs))
	}
}

// TestTriggerEnvironmentLimit: environment_not_found goes before
// trigger_limit_reached.
func TestTriggerEnvironmentLimit(t *testing.T) {
	h := newHarness(t)
	for range 100 {
		newTrigger(t, h, nil)
	}
	if r := create(h, user, body(map[string]any{"environmentId": "env_gone"})); r.Code() != "environment_not_found" {
		t.Errorf("%d %s", r.Status, r.Raw)
	}
	if r := create(h, user, body(nil)); r.Code() != "trigger_limit_reached" {
		t.Errorf("%d %s", r.Status, r.Raw)
	}
}

// TestDeleteRacesTriggerWrite: a delete of an environment and a trigger's
// create naming it, at once, never both succeed: every time, either the
// trigger exists and names the environment, which stays, or the
// environment is gone and no trigger names it.
func TestDeleteRacesTriggerWrite(t *testing.T) {
	h := newHarness(t)
	for i := range 20 {
		env := newEnvironment(t, h, user, fmt.Sprint("Raced ", i), nil)
		var wg sync.WaitGroup
		var created, deleted apitest.Result
		wg.Go(func() { created = create(h, user, body(map[string]any{"environmentId": env})) })
		wg.Go(func() {
			deleted = h.Do(apitest.Call{Method: "DELETE", Path: "/v1/environments/" + env, Claims: user})
		})
		wg.Wait()
		switch {
		case created.Status == 201 && deleted.Status == 409 && uses(h, env) == "1":
		case created.Code() == "environment_not_found" && deleted.Status == 204 && uses(h, env) == "gone":
		default:
			t.Fatalf("round %d: create %d %s, delete %d %s, count %s", i, created.Status, created.Raw, deleted.Status, deleted.Raw, uses(h, env))
		}
	}
}

// TestRunInEnvironment: a trigger's session runs in its named
// environment, else its user's default; one whose environment is gone (a
// hand's delete) is a failed run with environment_not_found.
func TestRunInEnvironment(t *testing.T) {
	h := newHarness(t)
	def := newEnvironment(t, h, user, "Default", map[string]any{"default": true})
	named := newEnvironment(t, h, user, "Named", map[string]any{"sandboxAllocation": "vercel-small"})
	id := newTrigger(t, h, map[string]any{"environmentId": named})
	r := runNowCall(h, user, id, "", "")
	session, _ := r.Body["session"].(map[string]any)
	env, _ := session["environment"].(map[string]any)
	if r.Status != 201 || env["environmentId"] != named || session["sandbox"].(map[string]any)["allocation"] != "vercel-small" {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	plain := newTrigger(t, h, nil)
	r = runNowCall(h, user, plain, "", "")
	if env, _ := r.Body["session"].(map[string]any)["environment"].(map[string]any); r.Status != 201 || env["environmentId"] != def {
		t.Errorf("the default: %d %s", r.Status, r.Raw)
	}
	h.SetTrigger(id, "environmentId", &types.AttributeValueMemberS{Value: "env_gone"})
	if r := runNowCall(h, user, id, "", ""); r.Code() != "environment_not_found" {
		t.Errorf("its environment gone: %d %s", r.Status, r.Raw)
	}
	runs := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id + "/runs", Claims: user})
	if !strings.Contains(runs.Raw, `"status":"failed","sessionId":null,"error":"environment_not_found"`) {
		t.Errorf("no failed run: %s", runs.Raw)
	}
}
