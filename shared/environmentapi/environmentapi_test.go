package environmentapi_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/infra/local/kms"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

var (
	user  = map[string]string{"sub": "u1", "org_ids": "[o1 o2]"}
	other = map[string]string{"sub": "u2", "org_ids": "[o1]"}
	envID = regexp.MustCompile(`^env_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	clock = time.Date(2026, 12, 6, 9, 30, 15, 0, time.UTC)
)

// The secret value of the tests' bodies: it must never be found in an
// answer, a log line or the table.
const secretValue = "npm_Zq8vK2mP4xR7tY1wB3nC6dF9gH0jL5sA"

var baseBody = map[string]any{
	"name":          "Node",
	"description":   "Node 22 with the registry's token",
	"variables":     map[string]any{"NODE_ENV": map[string]any{"value": "production"}, "NPM_TOKEN": map[string]any{"value": secretValue, "secret": true}},
	"setupCommands": []any{"npm ci"},
}

func body(set map[string]any) string { return apitest.Body(baseBody, set) }

func newHarness(t *testing.T, b *dynamotest.Backend) *apitest.Harness {
	h := apitest.New(t, b)
	h.Environments.Now = func() time.Time { return clock }
	return h
}

func create(h *apitest.Harness, claims map[string]string, b string) apitest.Result {
	return h.Do(apitest.Call{Method: "POST", Path: "/v1/environments", Claims: claims, Body: b})
}

func call(h *apitest.Harness, method, path string, claims map[string]string, b string) apitest.Result {
	return h.Do(apitest.Call{Method: method, Path: path, Claims: claims, Body: b})
}

// mustCreate creates an environment of claims and returns its id.
func mustCreate(t *testing.T, h *apitest.Harness, claims map[string]string, b string) string {
	t.Helper()
	r := create(h, claims, b)
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	return r.Body["environmentId"].(string)
}

// noSecret fails when the secret value is anywhere it must never be.
func noSecret(t *testing.T, h *apitest.Harness, answers ...apitest.Result) {
	t.Helper()
	for _, r := range answers {
		if strings.Contains(r.Raw, secretValue) {
			t.Errorf("an answer holds the secret: %s", r.Raw)
		}
	}
	if strings.Contains(h.Snapshot(), secretValue) {
		t.Error("the table holds the secret in clear")
	}
	if strings.Contains(strings.Join(h.Logs(), "\n"), secretValue) {
		t.Error("a log line holds the secret")
	}
}

// TestCreate: 201 with Location and every member; a secret answered as
// null and kept as its ciphertext alone, under the environments' key,
// with the context {environmentId, variable}; version 1, no default
// unless asked.
func TestCreate(t *testing.T) {
	h := newHarness(t, nil)
	r := create(h, user, body(map[string]any{"orgId": "o1"}))
	id, _ := r.Body["environmentId"].(string)
	if r.Status != 201 || !envID.MatchString(id) || r.Headers["Location"] != "/v1/environments/"+id {
		t.Fatalf("%d %v %s", r.Status, r.Headers, r.Raw)
	}
	want := map[string]any{
		"environmentId": id, "orgId": "o1", "name": "Node", "description": "Node 22 with the registry's token", "default": false,
		"variables":     map[string]any{"NODE_ENV": map[string]any{"value": "production", "secret": false}, "NPM_TOKEN": map[string]any{"value": nil, "secret": true}},
		"setupCommands": []any{"npm ci"}, "sandboxAllocation": nil,
		"createdAt": "2026-12-06T09:30:15Z", "updatedAt": "2026-12-06T09:30:15Z", "version": float64(1),
	}
	if fmt.Sprint(r.Body) != fmt.Sprint(want) {
		t.Errorf("answered %v\nwant %v", r.Body, want)
	}
	noSecret(t, h, r)
	if got := h.KMS.Used(); len(got) != 1 || got[0] != "Encrypt alias/EnvironmentSecretsKey" {
		t.Errorf("asked of KMS: %q", got)
	}
	// The ciphertext opens with the context exactly, for the execution
	// plane.
	item := h.Snapshot()
	m := regexp.MustCompile(`"sealed":\{"B":"([^"]+)"\}`).FindStringSubmatch(item)
	if m == nil {
		t.Fatalf("no ciphertext in %s", item)
	}
	blob, err := base64.StdEncoding.DecodeString(m[1])
	if err != nil {
		t.Fatal(err)
	}
	out, err := kms.Client(h.KMS.URL).Decrypt(context.Background(), &awskms.DecryptInput{
		CiphertextBlob: blob, EncryptionContext: map[string]string{"environmentId": id, "variable": "NPM_TOKEN"},
	})
	if err != nil || string(out.Plaintext) != secretValue {
		t.Errorf("opened with its context: %v", err)
	}
	if got := call(h, "GET", "/v1/environments/"+id, other, ""); got.Status != 200 || fmt.Sprint(got.Body) != fmt.Sprint(want) {
		t.Errorf("an org member reads it: %d %s", got.Status, got.Raw)
	}
	if got := call(h, "GET", "/v1/environments/"+id, map[string]string{"sub": "u1", "org_ids": "o3"}, ""); got.Status != 404 {
		t.Errorf("its creator, out of the org: %d", got.Status)
	}
}

// TestCreateChecks: the contract's order, 400 → 403 → allocation checks →
// 409 → 422, each refusal writing nothing and asking nothing of KMS.
func TestCreateChecks(t *testing.T) {
	h := newHarness(t, nil)
	mustCreate(t, h, user, body(nil))
	before, calls := h.Snapshot(), h.KMS.Calls.Load()
	for _, row := range []struct {
		rule, body string
		claims     map[string]string
		status     int
		code       string
	}{
		{"not JSON", "{", user, 400, "invalid_request"},
		{"a plain credential, before the org", body(map[string]any{"orgId": "o9", "variables": map[string]any{"T": map[string]any{"value": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}}}), user, 400, "invalid_request"},
		{"a reserved name", body(map[string]any{"variables": map[string]any{"AWS_REGION": map[string]any{"value": "x"}}}), user, 400, "invalid_request"},
		{"a foreign org, before the allocation", body(map[string]any{"orgId": "o9", "sandboxAllocation": "cloudflare-shared"}), user, 403, "forbidden"},
		{"a retired allocation, before the name", body(map[string]any{"sandboxAllocation": "cloudflare-shared"}), user, 422, "sandbox_allocation_retired"},
		{"the name in another case", body(map[string]any{"name": "NODE"}), user, 409, "environment_name_taken"},
	} {
		t.Run(row.rule, func(t *testing.T) {
			r := create(h, row.claims, row.body)
			if r.Status != row.status || r.Code() != row.code {
				t.Errorf("%d %s, want %d %s", r.Status, r.Raw, row.status, row.code)
			}
			if h.Snapshot() != before || h.KMS.Calls.Load() != calls && row.code != "environment_name_taken" {
				t.Error("a refusal wrote, or asked KMS before the checks")
			}
			noSecret(t, h, r)
		})
	}
	// Another owner may take the name: the org, another user.
	mustCreate(t, h, user, body(map[string]any{"orgId": "o1"}))
	mustCreate(t, h, other, body(nil))
}

// TestLimit: an owner keeps 100; the 101st is 422, and another owner is
// not counted with it.
func TestLimit(t *testing.T) {
	h := newHarness(t, nil)
	plain := map[string]any{"variables": nil}
	for i := range 100 {
		plain["name"] = fmt.Sprintf("env %d", i)
		mustCreate(t, h, user, body(plain))
	}
	plain["name"] = "one more"
	before := h.Snapshot()
	if r := create(h, user, body(plain)); r.Status != 422 || r.Code() != "environment_limit_reached" {
		t.Errorf("%d %s", r.Status, r.Raw)
	}
	if h.Snapshot() != before {
		t.Error("the refused create wrote")
	}
	plain["orgId"] = "o1"
	mustCreate(t, h, user, body(plain))
}

// TestListAndPages: the user's own without orgId, the org's with it (403
// for an org not the caller's); newest first, a page at a time; the
// default marked.
func TestListAndPages(t *testing.T) {
	h := newHarness(t, nil)
	var ids []string
	for i := range 5 {
		h.Environments.Now = func() time.Time { return clock.Add(time.Duration(i) * time.Millisecond) }
		ids = append(ids, mustCreate(t, h, user, body(map[string]any{"name": fmt.Sprint("env ", i), "default": i == 2})))
	}
	org := mustCreate(t, h, other, body(map[string]any{"orgId": "o1"}))
	var got []string
	path := "/v1/environments?limit=2"
	for pages := 0; ; pages++ {
		r := call(h, "GET", path, user, "")
		if r.Status != 200 || pages > 3 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		for _, it := range r.Body["items"].([]any) {
			e := it.(map[string]any)
			got = append(got, e["environmentId"].(string))
			if isDefault := e["environmentId"] == ids[2]; e["default"] != isDefault {
				t.Errorf("%s default %v", e["environmentId"], e["default"])
			}
		}
		next, _ := r.Body["nextCursor"].(string)
		if next == "" {
			break
		}
		path = "/v1/environments?limit=2&cursor=" + next
	}
	if want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	if r := call(h, "GET", "/v1/environments?orgId=o1", user, ""); r.Status != 200 || len(r.Body["items"].([]any)) != 1 ||
		r.Body["items"].([]any)[0].(map[string]any)["environmentId"] != org {
		t.Errorf("the org's: %d %s", r.Status, r.Raw)
	}
	for path, code := range map[string]string{
		"/v1/environments?orgId=o9": "forbidden", "/v1/environments?limit=0": "invalid_request",
		"/v1/environments?cursor=x": "invalid_request", "/v1/environments?orgId=a%20b": "invalid_request",
	} {
		if r := call(h, "GET", path, user, ""); r.Code() != code {
			t.Errorf("%s: %d %s", path, r.Status, r.Raw)
		}
	}
}

// TestPatch: a merge patch (application/merge-patch+json or
// application/json, any other type 400); a secret sent back as a GET
// answered it keeps its ciphertext; a replaced value is sealed anew;
// version moves on at every change of content, never for the default; {}
// writes nothing.
func TestPatch(t *testing.T) {
	h := newHarness(t, nil)
	id := mustCreate(t, h, user, body(nil))
	path := "/v1/environments/" + id
	got := call(h, "GET", path, user, "")
	patch := func(b string, status int) apitest.Result {
		t.Helper()
		r := call(h, "PATCH", path, user, b)
		if r.Status != status {
			t.Fatalf("PATCH %s: %d %s", b, r.Status, r.Raw)
		}
		noSecret(t, h, r)
		return r
	}
	before := h.Snapshot()
	for _, unchanged := range []string{`{}`, `{"variables":{"NPM_TOKEN":{"value":null,"secret":true}}}`, `{"name":"Node","default":false}`} {
		if r := patch(unchanged, 200); fmt.Sprint(r.Body) != fmt.Sprint(got.Body) || h.Snapshot() != before {
			t.Errorf("%s changed it: %s", unchanged, r.Raw)
		}
	}
	h.Environments.Now = func() time.Time { return clock.Add(time.Hour) }
	r := patch(`{"default":true}`, 200)
	if r.Body["default"] != true || r.Body["version"] != float64(1) || r.Body["updatedAt"] != got.Body["updatedAt"] {
		t.Errorf("made default: %s", r.Raw)
	}
	r = patch(`{"description":null,"variables":{"NODE_ENV":null,"CI":{"value":"1"},"NPM_TOKEN":{"value":"npm_other"}},"setupCommands":["make"]}`, 200)
	if r.Body["version"] != float64(2) || r.Body["description"] != nil || r.Body["default"] != true || r.Body["updatedAt"] != "2026-12-06T10:30:15Z" ||
		fmt.Sprint(r.Body["variables"]) != "map[CI:map[secret:false value:1] NPM_TOKEN:map[secret:true value:<nil>]]" {
		t.Errorf("changed: %s", r.Raw)
	}
	if strings.Contains(h.Snapshot(), "npm_other") {
		t.Error("the new secret is in clear")
	}
	r = patch(`{"variables":{"CI":{"value":"1","secret":true}}}`, 200)
	if r.Body["version"] != float64(3) || fmt.Sprint(r.Body["variables"]) != "map[CI:map[secret:true value:<nil>] NPM_TOKEN:map[secret:true value:<nil>]]" {
		t.Errorf("made secret: %s", r.Raw)
	}
	before = h.Snapshot()
	for _, bad := range []struct{ body, code string }{
		{`{"variables":{"CI":{"secret":false}}}`, "invalid_request"}, // no longer secret needs its value
		{`{"variables":{"NEW":{"secret":true}}}`, "invalid_request"}, // a new variable needs its value
		{`{"name":null}`, "invalid_request"},                         // a required member
		{`{"orgId":"o1"}`, "invalid_request"},                        // not a member of a patch
		{`{"setupCommands":["ghp_abcdefghijklmnopqrstuvwxyz0123456789"]}`, "invalid_request"},
		{`{"sandboxAllocation":"cloudflare-shared"}`, "sandbox_allocation_retired"},
	} {
		if r := call(h, "PATCH", path, user, bad.body); r.Code() != bad.code {
			t.Errorf("%s: %d %s", bad.body, r.Status, r.Raw)
		}
	}
	if h.Snapshot() != before {
		t.Error("a refused patch wrote")
	}
	mustCreate(t, h, user, body(map[string]any{"name": "Deno", "variables": nil}))
	if r := call(h, "PATCH", path, user, `{"name":"deno"}`); r.Code() != "environment_name_taken" {
		t.Errorf("a taken name: %d %s", r.Status, r.Raw)
	}
	if r := patch(`{"name":"NODE"}`, 200); r.Body["name"] != "NODE" || r.Body["version"] != float64(4) {
		t.Errorf("renamed in another case: %s", r.Raw)
	}
	if r := patch(`{"default":false}`, 200); r.Body["default"] != false || r.Body["version"] != float64(4) {
		t.Errorf("no longer the default: %s", r.Raw)
	}
	if r := call(h, "PATCH", path, other, `{"name":"x"}`); r.Status != 404 {
		t.Errorf("another's: %d", r.Status)
	}
	before = h.Snapshot()
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/merge-patch+json; charset=utf-8"} {
		r := h.Do(apitest.Call{Method: "PATCH", Path: path, Claims: user, Body: `{"name":"Typed"}`, Headers: map[string]string{"Content-Type": ct}})
		if ct == "application/merge-patch+json; charset=utf-8" {
			if r.Status != 200 {
				t.Errorf("%s: %d %s", ct, r.Status, r.Raw)
			}
			continue
		}
		if r.Code() != "invalid_request" || !strings.Contains(r.Raw, "Content-Type") || h.Snapshot() != before {
			t.Errorf("%s: %d %s", ct, r.Status, r.Raw)
		}
	}
}

// TestOneDefault: concurrent changes that each make another environment
// the default all succeed, and the owner has exactly one default, whose
// copy is the pointer's. On both backends.
func TestOneDefault(t *testing.T) {
	for _, b := range dynamotest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { oneDefault(t, newHarness(t, &b)) })
	}
}

func oneDefault(t *testing.T, h *apitest.Harness) {
	var ids []string
	for i := range 8 {
		ids = append(ids, mustCreate(t, h, user, body(map[string]any{"name": fmt.Sprint("env ", i), "variables": nil, "default": i == 0})))
	}
	var wg sync.WaitGroup
	statuses := make([]int, len(ids))
	for i, id := range ids {
		wg.Go(func() { statuses[i] = call(h, "PATCH", "/v1/environments/"+id, user, `{"default":true}`).Status })
	}
	wg.Wait()
	defaults := 0
	for i, id := range ids {
		r := call(h, "GET", "/v1/environments/"+id, user, "")
		if statuses[i] != 200 || r.Body["version"] != float64(1) {
			t.Errorf("%s: %d, version %v", id, statuses[i], r.Body["version"])
		}
		if r.Body["default"] == true {
			defaults++
		}
	}
	if defaults != 1 {
		t.Errorf("%d defaults", defaults)
	}
}

// TestDelete: 204, then 404; one that a trigger names is 409 and stays;
// the default goes with its pointer, leaving the owner without one.
func TestDelete(t *testing.T) {
	h := newHarness(t, nil)
	id := mustCreate(t, h, user, body(map[string]any{"default": true}))
	used := mustCreate(t, h, user, body(map[string]any{"name": "Used"}))
	h.SetItem("ENVIRONMENT#"+used, "ENVIRONMENT", "triggers", &types.AttributeValueMemberN{Value: "1"})
	before := h.Snapshot()
	if r := call(h, "DELETE", "/v1/environments/"+used, user, ""); r.Status != 409 || r.Code() != "environment_in_use" || strings.Contains(r.Raw, "trg_") {
		t.Errorf("in use: %d %s", r.Status, r.Raw)
	}
	if h.Snapshot() != before {
		t.Error("the refused delete wrote")
	}
	if r := call(h, "DELETE", "/v1/environments/"+id, other, ""); r.Status != 404 {
		t.Errorf("another's: %d", r.Status)
	}
	if r := call(h, "DELETE", "/v1/environments/"+id, user, ""); r.Status != 204 {
		t.Errorf("%d %s", r.Status, r.Raw)
	}
	if r := call(h, "DELETE", "/v1/environments/"+id, user, ""); r.Status != 404 {
		t.Errorf("again: %d", r.Status)
	}
	if strings.Contains(h.Snapshot(), "DEFAULTENV") {
		t.Error("the default's pointer outlived it")
	}
	// Its name is free again.
	mustCreate(t, h, user, body(nil))
}

// TestKMSDown: a write with a secret while KMS is unreachable is 503 with
// Retry-After, and writes nothing; one with no secret asks nothing of it.
func TestKMSDown(t *testing.T) {
	h := newHarness(t, nil)
	id := mustCreate(t, h, user, body(map[string]any{"name": "plain", "variables": nil}))
	h.KMS.Close()
	before := h.Snapshot()
	for _, c := range []apitest.Call{
		{Method: "POST", Path: "/v1/environments", Claims: user, Body: body(nil)},
		{Method: "PATCH", Path: "/v1/environments/" + id, Claims: user, Body: `{"variables":{"T":{"value":"x","secret":true}}}`},
	} {
		if r := h.Do(c); r.Status != 503 || r.Headers["Retry-After"] == "" {
			t.Errorf("%s: %d %v %s", c.Method, r.Status, r.Headers, r.Raw)
		}
	}
	if h.Snapshot() != before {
		t.Error("a write went on without KMS")
	}
	mustCreate(t, h, user, body(map[string]any{"name": "plain too", "variables": nil}))
}

// TestStorageFaults: a write throttled past the SDK's retries, or whose
// connection drops, is 503 with Retry-After and writes nothing; a lost
// answer is found again: one environment, one claim of its name, one
// count. A conflict with another transaction is judged again.
func TestStorageFaults(t *testing.T) {
	for _, row := range []struct {
		rule   string
		fault  faultproxy.Fault
		n      int
		status int
	}{
		{"throttled past the retries", faultproxy.DynamoThrottle, 10, 503},
		{"dropped connections", faultproxy.Drop, 10, 503},
		{"a lost answer", faultproxy.DropAfter, 1, 201},
		{"a conflict", faultproxy.DynamoConflict, 1, 201},
	} {
		t.Run(row.rule, func(t *testing.T) {
			h, p := apitest.Faulty(t)
			h.Environments.Now = func() time.Time { return clock }
			before := h.Snapshot()
			p.Inject("TransactWriteItems", row.n, row.fault)
			r := create(h, user, body(map[string]any{"default": true}))
			if r.Status != row.status || row.status == 503 && r.Headers["Retry-After"] == "" {
				t.Fatalf("%d %v %s", r.Status, r.Headers, r.Raw)
			}
			if row.status == 503 {
				if h.Snapshot() != before {
					t.Error("a failed write wrote")
				}
				return
			}
			// The environment, its name's claim, its owner's count, the
			// default pointer; nothing twice.
			if items := h.Items(); len(items) != 4 {
				t.Errorf("%d items: %v", len(items), items)
			}
			if got := call(h, "GET", "/v1/environments/"+r.Body["environmentId"].(string), user, ""); got.Status != 200 || got.Body["default"] != true {
				t.Errorf("%d %s", got.Status, got.Raw)
			}
		})
	}
}
