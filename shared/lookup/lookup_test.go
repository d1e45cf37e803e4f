package lookup_test

import (
	"encoding/json/v2"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/testkit"
	"github.com/cloud-agent/control-plane/shared/settings"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

var (
	owner    = map[string]string{"sub": "u1", "org_ids": `["org1","org_42","org_9"]`}
	noOrgs   = map[string]string{"sub": "u1"}
	stranger = map[string]string{"sub": "u2", "org_ids": `["org1","org_42","org_9"]`}
	admin    = map[string]string{"sub": "root", "scope": "openid cloud-agent:admin"}
)

const fixtures = "../store/testdata/items"

func putFixture(t *testing.T, h *apitest.Harness, name string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtures, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	h.Put(data)
}

func get(h *apitest.Harness, claims map[string]string, path string) apitest.Result {
	return h.Do(apitest.Call{Method: "GET", Path: path, Claims: claims})
}

// TestLegacySessions: every stored shape answers the lookup as the
// contract says (the codec's tests hold the field-by-field rules; here each
// shape goes through the table and the route), in one DynamoDB request.
func TestLegacySessions(t *testing.T) {
	h := apitest.New(t, nil)
	rows := []struct {
		fixture, id, state, code, scope string
		legacy                          bool
	}{
		{"session-v2-current", "workspace_0b8f3a1e-8a51-4c1b-9a57-3e0b3c2d1f00", "allocated", "", "isolated", false},
		{"session-v2-shared-sbx", "workspace_shared", "retired", "sandbox_runtime_retired", "shared", true},
		{"session-v2-route-key", "agent_route", "retired", "sandbox_runtime_retired", "shared", true},
		{"session-v2-owner-key", "agent_owner", "retired", "sandbox_runtime_retired", "shared", true},
		{"session-v2-legacy-isolated", "agent_ses", "retired", "sandbox_runtime_retired", "isolated", true},
		{"session-v2-sbx-no-kind", "workspace_nokind", "retired", "sandbox_runtime_retired", "unknown", true},
		{"session-v1-flat", "agent_v1", "retired", "sandbox_runtime_retired", "shared", true},
		{"session-v2-byoc", "workspace_byoc", "allocated", "", "isolated", false},
	}
	for _, r := range rows {
		t.Run(r.fixture, func(t *testing.T) {
			putFixture(t, h, r.fixture)
			res := get(h, owner, "/v1/sessions/"+r.id+"/allocation")
			if res.Status != 200 {
				t.Fatalf("%d %s", res.Status, res.Raw)
			}
			rt := res.Body["runtime"].(map[string]any)
			sb := res.Body["sandbox"].(map[string]any)
			code, _ := rt["code"].(string)
			if rt["state"] != r.state || code != r.code || sb["containerScope"] != r.scope || res.Body["record"].(map[string]any)["legacy"] != r.legacy {
				t.Errorf("%s", res.Raw)
			}
			if res.Requests != 1 {
				t.Errorf("a lookup made %d DynamoDB requests, want 1", res.Requests)
			}
			if strings.Contains(res.Raw, "secret-value") {
				t.Error("an ignored attribute is shown")
			}
		})
	}
	t.Run("every stored shape", func(t *testing.T) {
		files, _ := filepath.Glob(filepath.Join(fixtures, "session-*.json"))
		if len(files) < 14 {
			t.Fatalf("%d session fixtures", len(files))
		}
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".json")
			putFixture(t, h, name)
			var item struct{ PK struct{ S string } }
			data, _ := os.ReadFile(f)
			_ = json.Unmarshal(data, &item)
			id := strings.TrimPrefix(item.PK.S, "SESSION#")
			res := get(h, admin, "/v1/sessions/"+id+"/allocation")
			if res.Status != 200 || res.Body["sessionId"] != id {
				t.Errorf("%s: %d %s", name, res.Status, res.Raw)
			}
		}
	})
	t.Run("the retired runtime message", func(t *testing.T) {
		res := get(h, owner, "/v1/sessions/agent_v1/allocation")
		msg := res.Body["runtime"].(map[string]any)["message"].(string)
		for _, want := range []string{"retired Cloudflare Sandbox runtime", "cannot be started or resumed", "new session with the default sandbox"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message %q lacks %q", msg, want)
			}
		}
	})
}

// TestWhoMayRead: the owner and an admin read a session; anyone else, and
// an unknown id, get 404 as if it did not exist; a bad id is 400.
func TestWhoMayRead(t *testing.T) {
	h := apitest.New(t, nil)
	putFixture(t, h, "session-v2-byoc") // user u1, org org1
	path := "/v1/sessions/workspace_byoc/allocation"
	rows := []struct {
		rule   string
		claims map[string]string
		path   string
		status int
	}{
		{"the owner", owner, path, 200},
		{"an admin", admin, path, 200},
		{"the same user outside the session's org", noOrgs, path, 404},
		{"another user in the org", stranger, path, 404},
		{"an unknown id", owner, "/v1/sessions/workspace_none/allocation", 404},
		{"a bad id", owner, "/v1/sessions/bad.id/allocation", 400},
		{"no caller", nil, path, 401},
		{"another method", owner, "/v1/sessions/workspace_byoc/allocation", 405},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			method := "GET"
			if r.status == 405 {
				method = "POST"
			}
			res := h.Do(apitest.Call{Method: method, Path: r.path, Claims: r.claims})
			if res.Status != r.status {
				t.Fatalf("%d %s", res.Status, res.Raw)
			}
			if r.status == 404 && res.Body["code"] != "not_found" {
				t.Errorf("%s", res.Raw)
			}
		})
	}
}

// TestInvalidRecord: 500 session_record_invalid to an admin and to its
// owner when the owner can still be read; 404 to anyone else.
func TestInvalidRecord(t *testing.T) {
	h := apitest.New(t, nil)
	putFixture(t, h, "invalid-unknown-kind")    // owner u1 readable
	putFixture(t, h, "invalid-v1-missing-user") // no owner
	rows := []struct {
		rule   string
		claims map[string]string
		path   string
		status int
	}{
		{"the owner", owner, "/v1/sessions/workspace_bad/allocation", 500},
		{"an admin", admin, "/v1/sessions/workspace_bad/allocation", 500},
		{"anyone else", stranger, "/v1/sessions/workspace_bad/allocation", 404},
		{"no readable owner: an admin", admin, "/v1/sessions/agent_bad/allocation", 500},
		{"no readable owner: anyone", owner, "/v1/sessions/agent_bad/allocation", 404},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			res := get(h, r.claims, r.path)
			if res.Status != r.status {
				t.Fatalf("%d %s", res.Status, res.Raw)
			}
			if r.status == 500 && (res.Body["code"] != "session_record_invalid" || strings.Contains(res.Raw, "dind")) {
				t.Errorf("%s", res.Raw)
			}
		})
	}
}

// TestAllocations: GET /v1/allocations for the caller or one of its orgs.
func TestAllocations(t *testing.T) {
	h := apitest.New(t, nil)
	res := get(h, owner, "/v1/allocations")
	want := `{"enabled":true,"default":"cloudflare-containers-standard-4","options":[` +
		`{"allocation":"cloudflare-containers-standard-4","provider":"cloudflare-containers","resources":{"vcpus":4,"memoryMiB":12288,"diskMB":20000}},` +
		`{"allocation":"cloudflare-containers-standard-3","provider":"cloudflare-containers","resources":{"vcpus":2,"memoryMiB":8192,"diskMB":16000}},` +
		`{"allocation":"vercel-small","provider":"vercel","resources":{"vcpus":2,"memoryMiB":4096,"diskMB":null}},` +
		`{"allocation":"vercel-large","provider":"vercel","resources":{"vcpus":4,"memoryMiB":8192,"diskMB":null}}],` +
		`"byoc":true,"retired":["cloudflare-single","isolated-standard","cloudflare-shared"]}`
	if res.Status != 200 || res.Raw != want {
		t.Errorf("got  %s\nwant %s", res.Raw, want)
	}
	if res.Requests != 0 {
		t.Errorf("%d DynamoDB requests", res.Requests)
	}
	h.SetSettings([]settings.Parameter{{Name: "selection/owners", Type: "StringList", Value: "org_9"}})
	rows := []struct {
		rule    string
		path    string
		status  int
		enabled bool
	}{
		{"the org is the owner", "/v1/allocations?orgId=org_9", 200, true},
		{"the user is the owner", "/v1/allocations", 200, false},
		{"an org the caller is not in", "/v1/allocations?orgId=org_x", 403, false},
		{"a malformed org id", "/v1/allocations?orgId=o%2F1", 400, false},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			res := get(h, owner, r.path)
			if res.Status != r.status || (r.status == 200 && res.Body["enabled"] != r.enabled) {
				t.Errorf("%d %s", res.Status, res.Raw)
			}
			if r.status == 200 && !r.enabled {
				if opts, _ := json.Marshal(res.Body["options"]); string(opts) != "[]" {
					t.Errorf("options %s", opts)
				}
			}
		})
	}
}

// TestOutcome: the lookup answers a session's outcome (contract v7), its
// error's message to the owner and null to an admin; null while the
// session runs.
func TestOutcome(t *testing.T) {
	h := apitest.New(t, nil)
	putFixture(t, h, "session-v2-byoc")
	path := "/v1/sessions/workspace_byoc/allocation"
	if res := get(h, owner, path); res.Status != 200 || res.Body["outcome"] != nil || !strings.Contains(res.Raw, `"outcome":null`) {
		t.Fatalf("a running session: %d %s", res.Status, res.Raw)
	}
	h.SetItem("SESSION#workspace_byoc", "METADATA", "metadata.outcome", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		"status": &types.AttributeValueMemberS{Value: "failed"}, "revision": &types.AttributeValueMemberN{Value: "1"},
		"endedAt":    &types.AttributeValueMemberS{Value: "2026-11-30T11:00:00Z"},
		"reportedAt": &types.AttributeValueMemberS{Value: "2026-11-30T11:00:05Z"},
		"error": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"code": &types.AttributeValueMemberS{Value: "tests_failed"}, "message": &types.AttributeValueMemberS{Value: "3 tests failed"},
		}},
	}})
	want := `{"endedAt":"2026-11-30T11:00:00Z","error":{"code":"tests_failed","message":%s},"reportedAt":"2026-11-30T11:00:05Z","status":"failed"}`
	for _, r := range []struct {
		who     string
		claims  map[string]string
		message string
	}{{"the owner", owner, `"3 tests failed"`}, {"an admin", admin, "null"}} {
		res := get(h, r.claims, path)
		if got := testkit.JSON(res.Body["outcome"]); res.Status != 200 || got != fmt.Sprintf(want, r.message) {
			t.Errorf("%s: %d %s", r.who, res.Status, got)
		}
	}
}
