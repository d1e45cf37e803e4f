package start_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/start"
)

const hex48 = "0123456789abcdef0123456789abcdef0123456789abcdef"

// fingerprint is the fingerprint of a body as the start computes it.
func fingerprint(t *testing.T, b string) string {
	t.Helper()
	req, err := start.ParseRequest([]byte(b), "", false)
	if err != nil {
		t.Fatal(err)
	}
	var a allocation.Allocation
	if req.Allocation != nil {
		if a, err = allocation.Parse(req.Allocation); err != nil {
			t.Fatal(err)
		}
	}
	fp, err := start.Fingerprint(req, a)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// row is a ledger row of user u1 for key k in DynamoDB JSON, with the
// given string and number attributes over a completed, unexpired base.
func row(k string, s map[string]string, n map[string]int64) []byte {
	item := map[string]any{
		"PK": map[string]string{"S": "OPERATION#u1#" + k}, "SK": map[string]string{"S": "LEDGER"},
		"intent": map[string]string{"S": "create_session"}, "status": map[string]string{"S": "completed"},
		"createdAt": map[string]string{"S": "2026-11-30T10:00:00Z"},
		"expiresAt": map[string]string{"N": strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)},
	}
	for name, v := range s {
		item[name] = map[string]string{"S": v}
	}
	for name, v := range n {
		item[name] = map[string]string{"N": strconv.FormatInt(v, 10)}
	}
	b, _ := json.Marshal(item)
	return b
}

// session is a current session item of user u1 in DynamoDB JSON.
func session(id string) []byte {
	b, _ := json.Marshal(map[string]any{
		"PK": map[string]string{"S": "SESSION#" + id}, "SK": map[string]string{"S": "METADATA"},
		"metadataSchemaVersion": map[string]string{"N": "2"},
		"metadata": map[string]any{"M": map[string]any{
			"identity":  map[string]any{"M": map[string]any{"sessionId": map[string]string{"S": id}, "userId": map[string]string{"S": "u1"}}},
			"workspace": map[string]any{"M": map[string]any{"sandboxId": map[string]string{"S": allocation.SandboxID(id)}, "sandboxKind": map[string]string{"S": "isolated"}, "sandboxProvider": map[string]string{"S": "vercel"}, "sandboxAllocation": map[string]string{"S": "vercel-small"}}},
			"lifecycle": map[string]any{"M": map[string]any{"version": map[string]string{"N": "1"}, "timestamp": map[string]string{"N": "1796032800000"}}},
		}},
	})
	return b
}

// otherUsers is a current session item of user u9.
func otherUsers(id string) []byte {
	return []byte(strings.ReplaceAll(string(session(id)), `"S":"u1"`, `"S":"u9"`))
}

// inOrg is a current session item of user u1 in an org.
func inOrg(id, org string) []byte {
	return []byte(strings.Replace(string(session(id)), `"userId":{"S":"u1"}`, `"userId":{"S":"u1"},"orgId":{"S":"`+org+`"}`, 1))
}

// TestLedgerRules: rows in the shapes of older writers, written straight
// into the table, are judged by the rules of section 4 in order.
func TestLedgerRules(t *testing.T) {
	b := body(map[string]any{"operationKey": "k"})
	fp := fingerprint(t, b)
	ms := func(d time.Duration) int64 { return time.Now().Add(d).UnixMilli() }
	rows := []struct {
		rule    string
		row     []byte
		session []byte
		status  int
		code    string
		replay  string // the session id a 200 or 201 must carry
	}{
		{"1: another org", row("k", map[string]string{"orgId": "o1", "fingerprint": fp, "sessionId": "workspace_x"}, nil), nil, 409, "operation_key_reuse_mismatch", ""},
		{"1: another intent", row("k", map[string]string{"intent": "delete_session", "fingerprint": fp, "sessionId": "workspace_x"}, nil), nil, 409, "operation_key_reuse_mismatch", ""},
		{"2: recorded kind shared, never a replay", row("k", map[string]string{"fingerprint": fp, "sessionId": "workspace_x", "sandboxId": "sbx-" + hex48, "sandboxKind": "shared"}, nil), session("workspace_x"), 422, "sandbox_allocation_retired", ""},
		{"2: recorded allocation cloudflare-shared", row("k", map[string]string{"fingerprint": fp, "sessionId": "workspace_x", "sandboxAllocation": "cloudflare-shared"}, nil), session("workspace_x"), 422, "sandbox_allocation_retired", ""},
		{"3: a legacy shared id with no kind is on the retired runtime", row("k", map[string]string{"fingerprint": fp, "sessionId": "workspace_x", "sandboxId": "usr-" + hex48}, nil), session("workspace_x"), 422, "sandbox_runtime_retired", ""},
		{"3: a recorded cloudflare provider", row("k", map[string]string{"fingerprint": fp, "sessionId": "workspace_x", "sandboxId": "sbx-" + hex48, "sandboxProvider": "cloudflare"}, nil), session("workspace_x"), 422, "sandbox_runtime_retired", ""},
		{"3: the provider of the recorded allocation", row("k", map[string]string{"fingerprint": fp, "sessionId": "workspace_x", "sandboxAllocation": "cloudflare-single"}, nil), session("workspace_x"), 422, "sandbox_runtime_retired", ""},
		{"4: in progress with a live lease", row("k", map[string]string{"status": "in_progress", "fingerprint": fp, "sessionId": "workspace_x"}, map[string]int64{"leaseUntil": ms(30 * time.Second)}), nil, 409, "creation_in_progress", ""},
		{"5: lapsed lease, no session: afresh with the recorded id", row("k", map[string]string{"status": "in_progress", "fingerprint": "other", "sessionId": "workspace_rec"}, map[string]int64{"leaseUntil": ms(-time.Minute)}), nil, 201, "", "workspace_rec"},
		{"5: failed, no session: afresh with the recorded id", row("k", map[string]string{"status": "failed", "fingerprint": fp, "sessionId": "workspace_rec"}, nil), nil, 201, "", "workspace_rec"},
		{"5 then 7: lapsed lease, the session exists", row("k", map[string]string{"status": "in_progress", "fingerprint": fp, "sessionId": "workspace_x"}, map[string]int64{"leaseUntil": ms(-time.Minute)}), session("workspace_x"), 200, "", "workspace_x"},
		{"5 then 6: failed, the session exists, another request", row("k", map[string]string{"status": "failed", "fingerprint": "other", "sessionId": "workspace_x"}, nil), session("workspace_x"), 422, "operation_key_payload_mismatch", ""},
		{"6: another fingerprint", row("k", map[string]string{"fingerprint": "other", "sessionId": "workspace_x"}, nil), session("workspace_x"), 422, "operation_key_payload_mismatch", ""},
		{"7: replay", row("k", map[string]string{"fingerprint": fp, "sessionId": "workspace_x"}, nil), session("workspace_x"), 200, "", "workspace_x"},
		{"7: a row naming another user's session is as if it were gone", row("k", map[string]string{"fingerprint": fp, "sessionId": "workspace_other"}, nil), otherUsers("workspace_other"), 404, "not_found", ""},
		{"7: a row naming a session of another org is as if it were gone", row("k", map[string]string{"fingerprint": fp, "sessionId": "workspace_org"}, nil), inOrg("workspace_org", "o2"), 404, "not_found", ""},
		{"7: the session is gone", row("k", map[string]string{"fingerprint": fp, "sessionId": "workspace_gone"}, nil), nil, 404, "not_found", ""},
		{"an expired row counts as absent", row("k", map[string]string{"fingerprint": "other", "sessionId": "workspace_x"}, map[string]int64{"expiresAt": time.Now().Add(-time.Second).Unix()}), nil, 201, "", ""},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			h := apitest.New(t, nil)
			h.Put(r.row)
			if r.session != nil {
				h.Put(r.session)
			}
			res := post(h, user, b)
			if res.Status != r.status || res.Code() != r.code {
				t.Fatalf("%d %s", res.Status, res.Raw)
			}
			if r.replay != "" && res.Body["sessionId"] != r.replay {
				t.Errorf("session %v, want %s", res.Body["sessionId"], r.replay)
			}
			if r.code == "creation_in_progress" && res.Headers["Retry-After"] == "" {
				t.Error("no Retry-After")
			}
			if r.status == 201 && r.replay != "" {
				again := post(h, user, b)
				if again.Status != 200 || again.Body["sessionId"] != r.replay {
					t.Errorf("the replaced row does not replay: %d %s", again.Status, again.Raw)
				}
			}
		})
	}
}
