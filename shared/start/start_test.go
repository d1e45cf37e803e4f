package start_test

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/testkit"
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/settings"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

var (
	user     = map[string]string{"sub": "u1", "org_ids": "[o1 o2]"}
	other    = map[string]string{"sub": "u2", "org_ids": "[o1]"}
	withBot  = map[string]string{"sub": "u1", "org_ids": "[o1 o2]", "bot_id": "b1"}
	baseBody = map[string]any{
		"repository": map[string]any{"type": "github", "repo": "acme/app"},
		"agent":      map[string]any{"mode": "code", "model": "anthropic/claude"},
	}
	sessionIDPattern = regexp.MustCompile(`^workspace_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
)

// body is the base body with members set (nil deletes one).
func body(set map[string]any) string { return apitest.Body(baseBody, set) }

func post(h *apitest.Harness, claims map[string]string, b string, headers ...string) apitest.Result {
	c := apitest.Call{Method: "POST", Path: "/v1/sessions", Claims: claims, Body: b, Headers: map[string]string{}}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] != "" {
			c.Headers[headers[i]] = headers[i+1]
		}
	}
	return h.Do(c)
}

func sandbox(r apitest.Result) map[string]any { s, _ := r.Body["sandbox"].(map[string]any); return s }

// TestNewSession: 201 with Location; the session id is workspace_ and a
// lowercase UUID v4; the sandbox id is derived from it; kind isolated on the
// effective default; a fresh start is two DynamoDB requests: the
// environments' read and the transaction.
func TestNewSession(t *testing.T) {
	h := apitest.New(t, nil)
	r := post(h, user, body(nil))
	if r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	id, _ := r.Body["sessionId"].(string)
	sb := sandbox(r)
	if !sessionIDPattern.MatchString(id) || r.Body["replayed"] != false || sb["id"] != allocation.SandboxID(id) ||
		sb["kind"] != "isolated" || sb["provider"] != "cloudflare-containers" || sb["allocation"] != "cloudflare-containers-standard-4" ||
		sb["containerScope"] != "isolated" || sb["route"] != nil {
		t.Errorf("body %s", r.Raw)
	}
	if r.Headers["Location"] != "/v1/sessions/"+id+"/allocation" || r.Headers["Cache-Control"] != "no-store" {
		t.Errorf("headers %v", r.Headers)
	}
	if r.Requests != 2 {
		t.Errorf("a fresh start made %d DynamoDB requests, want 2 (the environments' read, the transaction)", r.Requests)
	}
	if n := len(h.Items()); n != 3 {
		t.Errorf("%d items without an operation key, want 3 (the session, its prompt, its live entry)", n)
	}
	look := h.Do(apitest.Call{Method: "GET", Path: "/v1/sessions/" + id + "/allocation", Claims: user})
	if got := testkit.JSON(look.Body["sandbox"]); got != testkit.JSON(sb) || look.Body["record"].(map[string]any)["legacy"] != false {
		t.Errorf("the lookup shows %s, the start %s", got, testkit.JSON(sb))
	}
}

// TestReplay: with an operation key, the same request again is 200 with the
// same session and an equal sandbox object; the Idempotency-Key header is
// the same key; a replay makes 3 DynamoDB requests, as on DynamoDB: the
// environments' read, the refused transaction, which hands back the row,
// and the session's read.
func TestReplay(t *testing.T) {
	for _, b := range dynamotest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			h := apitest.New(t, &b)
			first := post(h, user, body(map[string]any{"operationKey": "k1"}))
			if first.Status != 201 || first.Requests != 2 {
				t.Fatalf("%d %s (%d requests)", first.Status, first.Raw, first.Requests)
			}
			again := post(h, user, body(nil), "Idempotency-Key", "k1")
			if again.Status != 200 || again.Body["replayed"] != true || again.Body["sessionId"] != first.Body["sessionId"] ||
				testkit.JSON(sandbox(again)) != testkit.JSON(sandbox(first)) || again.Headers["Location"] != first.Headers["Location"] {
				t.Fatalf("replay %d %s", again.Status, again.Raw)
			}
			if again.Requests != 3 {
				t.Errorf("a replay made %d DynamoDB requests, want 3", again.Requests)
			}
			if n := len(h.Items()); n != 4 {
				t.Errorf("%d items, want the session, its prompt, its live entry and its ledger row", n)
			}
		})
	}
}

// TestFingerprintCanonical: requests that differ only in what the
// fingerprint leaves out replay: null members, the default sandboxKind,
// empty objects, member order, and a kilo allocation object for its name.
func TestFingerprintCanonical(t *testing.T) {
	h := apitest.New(t, nil)
	first := post(h, user, body(map[string]any{"operationKey": "k", "runtime": map[string]any{"sandboxAllocation": "vercel-small"}}))
	if first.Status != 201 {
		t.Fatalf("%d %s", first.Status, first.Raw)
	}
	for _, b := range []string{
		body(map[string]any{"operationKey": "k", "orgId": nil, "initialTurn": map[string]any{}, "createdOnPlatform": nil,
			"runtime": map[string]any{"sandboxKind": "isolated", "sandboxAllocation": map[string]any{"provider": map[string]any{"id": "vercel", "account": "kilo"}, "instanceType": "small"}}}),
		`{"agent":{"model":"anthropic/claude","mode":"code","variant":null},"runtime":{"sandboxAllocation":"vercel-small"},"operationKey":"k","repository":{"repo":"acme/app","type":"github","branch":null},"orgId":null}`,
	} {
		if r := post(h, user, b); r.Status != 200 || r.Body["sessionId"] != first.Body["sessionId"] {
			t.Errorf("%s: %d %s", b, r.Status, r.Raw)
		}
	}
}

// TestLedgerMismatches: a key reused with another request is 422; with
// another org or bot, 409; the key belongs to its user.
func TestLedgerMismatches(t *testing.T) {
	h := apitest.New(t, nil)
	if r := post(h, user, body(map[string]any{"operationKey": "k"})); r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	rows := []struct {
		rule   string
		claims map[string]string
		body   string
		status int
		code   string
	}{
		{"another request is a payload mismatch", user, body(map[string]any{"operationKey": "k", "initialTurn": map[string]any{"prompt": "hi"}}), 422, "operation_key_payload_mismatch"},
		{"another org is a reuse mismatch", user, body(map[string]any{"operationKey": "k", "orgId": "o1"}), 409, "operation_key_reuse_mismatch"},
		{"another bot is a reuse mismatch", withBot, body(map[string]any{"operationKey": "k"}), 409, "operation_key_reuse_mismatch"},
		{"the key is per user", other, body(map[string]any{"operationKey": "k"}), 201, ""},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			res := post(h, r.claims, r.body)
			if res.Status != r.status || res.Code() != r.code {
				t.Errorf("%d %s", res.Status, res.Raw)
			}
		})
	}
}

// TestAllocationChecks: each allocation code of section 2 through the
// route.
func TestAllocationChecks(t *testing.T) {
	h := apitest.New(t, nil)
	rt := func(rt map[string]any) string { return body(map[string]any{"runtime": rt}) }
	rows := []struct {
		rule     string
		settings []settings.Parameter
		body     string
		status   int
		code     string
		detail   string
	}{
		{"1: unknown name", nil, rt(map[string]any{"sandboxAllocation": "vercel-huge"}), 400, "invalid_sandbox_allocation", ""},
		{"1: object with an extra key", nil, rt(map[string]any{"sandboxAllocation": map[string]any{"provider": map[string]any{"id": "vercel", "account": "kilo"}, "instanceType": "small", "x": 1}}), 400, "invalid_sandbox_allocation", ""},
		{"another JSON type is invalid_request", nil, rt(map[string]any{"sandboxAllocation": 5}), 400, "invalid_request", ""},
		{"2: allocation with code-review", nil, rt(map[string]any{"sandboxAllocation": "vercel-small", "sandboxKind": "code-review"}), 400, "allocation_routing_conflict", "Sandbox allocations cannot be combined with specialized sandbox routing"},
		{"3: cloudflare-shared is retired", nil, rt(map[string]any{"sandboxAllocation": "cloudflare-shared"}), 422, "sandbox_allocation_retired", "one sandbox now serves one workspace"},
		{"3: the shared kind is retired", nil, rt(map[string]any{"sandboxKind": "shared"}), 422, "sandbox_allocation_retired", "cloudflare-shared"},
		{"4: cloudflare-single is on the retired runtime", nil, rt(map[string]any{"sandboxAllocation": "cloudflare-single"}), 422, "sandbox_runtime_retired", "retired Cloudflare Sandbox runtime"},
		{"5: selection disabled", []settings.Parameter{{Name: "selection/owners", Type: "StringList", Value: "o9"}}, rt(map[string]any{"sandboxAllocation": "vercel-small"}), 403, "sandbox_selection_disabled", "Sandbox selection is not enabled for this owner"},
		{"5: the org is the owner", []settings.Parameter{{Name: "selection/owners", Type: "StringList", Value: "o1"}}, body(map[string]any{"orgId": "o1", "runtime": map[string]any{"sandboxAllocation": "vercel-small"}}), 201, "", ""},
		{"6: not selectable", []settings.Parameter{{Name: "allocation/selectable", Type: "StringList", Value: "vercel-large"}}, rt(map[string]any{"sandboxAllocation": "vercel-small"}), 422, "sandbox_allocation_unavailable", ""},
		{"byoc passes", nil, rt(map[string]any{"sandboxAllocation": map[string]any{"provider": map[string]any{"id": "vercel", "account": "byoc"}, "instanceType": "large"}}), 201, "", ""},
		{"code-review", nil, rt(map[string]any{"sandboxKind": "code-review"}), 201, "", ""},
		{"unknown kind is invalid_request", nil, rt(map[string]any{"sandboxKind": "dind"}), 400, "invalid_request", ""},
		{"no usable default is 503", []settings.Parameter{{Name: "provider/retired", Type: "StringList", Value: "cloudflare-containers"}}, body(nil), 503, "service_unavailable", ""},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			h.SetSettings(r.settings)
			before := len(h.Items())
			res := post(h, user, r.body)
			if res.Status != r.status || res.Code() != r.code || !strings.Contains(fmt.Sprint(res.Body["detail"]), r.detail) {
				t.Fatalf("%d %s", res.Status, res.Raw)
			}
			if r.status >= 400 && len(h.Items()) != before {
				t.Error("a refused start wrote to the table")
			}
		})
	}
	t.Run("byoc is stored only as its request and shown with allocation null", func(t *testing.T) {
		h.SetSettings(nil)
		res := post(h, user, rt(map[string]any{"sandboxAllocation": map[string]any{"provider": map[string]any{"id": "vercel", "account": "byoc"}, "instanceType": "large"}}))
		sb := sandbox(res)
		if sb["allocation"] != nil || testkit.JSON(sb["allocationRequest"]) != `{"instanceType":"large","provider":{"account":"byoc","id":"vercel"}}` ||
			testkit.JSON(sb["resources"]) != `{"diskMB":null,"memoryMiB":8192,"vcpus":4}` {
			t.Errorf("%s", res.Raw)
		}
	})
	t.Run("code-review has its own resources and no allocation", func(t *testing.T) {
		res := post(h, user, rt(map[string]any{"sandboxKind": "code-review"}))
		sb := sandbox(res)
		if sb["kind"] != "code-review" || sb["allocation"] != nil || sb["allocationRequest"] != nil || sb["provider"] != "cloudflare-containers" ||
			testkit.JSON(sb["resources"]) != `{"diskMB":8000,"memoryMiB":4096,"vcpus":1}` {
			t.Errorf("%s", res.Raw)
		}
	})
}

// TestOrderOfChecks: 400 before 403 before checks 1 and 2 before the
// ledger before checks 3 to 6.
func TestOrderOfChecks(t *testing.T) {
	h := apitest.New(t, nil)
	rows := []struct {
		rule string
		body string
		code string
	}{
		{"400 before 403", body(map[string]any{"orgId": "o9", "agent": nil}), "invalid_request"},
		{"403 before check 1", body(map[string]any{"orgId": "o9", "runtime": map[string]any{"sandboxAllocation": "nope"}}), "forbidden"},
		{"check 1 before the ledger", body(map[string]any{"operationKey": "k", "runtime": map[string]any{"sandboxAllocation": "nope"}}), "invalid_sandbox_allocation"},
	}
	if r := post(h, user, body(map[string]any{"operationKey": "k", "runtime": map[string]any{"sandboxAllocation": "vercel-small"}})); r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			if res := post(h, user, r.body); res.Code() != r.code {
				t.Errorf("%d %s", res.Status, res.Raw)
			}
		})
	}
	t.Run("the ledger before checks 5 and 6", func(t *testing.T) {
		h.SetSettings([]settings.Parameter{{Name: "selection/owners", Type: "StringList", Value: "-"}})
		if res := post(h, user, body(map[string]any{"operationKey": "k", "runtime": map[string]any{"sandboxAllocation": "vercel-small"}})); res.Status != 200 {
			t.Errorf("%d %s", res.Status, res.Raw)
		}
		if res := post(h, user, body(map[string]any{"operationKey": "k2", "runtime": map[string]any{"sandboxAllocation": "vercel-small"}})); res.Code() != "sandbox_selection_disabled" {
			t.Errorf("without a row: %d %s", res.Status, res.Raw)
		}
	})
}

// TestConcurrentStarts: 50 concurrent starts with one key create exactly
// one session.
func TestConcurrentStarts(t *testing.T) {
	h := apitest.New(t, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[any]int{}
	statuses := map[int]int{}
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := post(h, user, body(map[string]any{"operationKey": "same"}))
			mu.Lock()
			defer mu.Unlock()
			ids[r.Body["sessionId"]]++
			statuses[r.Status]++
		}()
	}
	wg.Wait()
	if len(ids) != 1 || statuses[201] != 1 || statuses[200] != 49 {
		t.Errorf("sessions %v, statuses %v", ids, statuses)
	}
	if n := len(h.Items()); n != 4 {
		t.Errorf("%d items, want one session, its prompt, its live entry and one row", n)
	}
}
