package start_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local"
	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/start"
)

const hex48 = "0123456789abcdef0123456789abcdef0123456789abcdef"

// fingerprint is the fingerprint of a body as the start computes it.
func fingerprint(t *testing.T, b string) string {
	t.Helper()
	req, err := start.ParseRequest([]byte(b), nil)
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

// TestLedgerRuleOrder: when a row breaks several rules, the first in the
// contract's order answers.
func TestLedgerRuleOrder(t *testing.T) {
	b := body(map[string]any{"operationKey": "k"})
	fp := fingerprint(t, b)
	live := map[string]int64{"leaseUntil": time.Now().Add(time.Minute).UnixMilli()}
	rows := []struct {
		rule     string
		row      []byte
		settings []local.Parameter
		code     string
	}{
		{"1 before 2", row("k", map[string]string{"orgId": "o1", "fingerprint": fp, "sessionId": "w", "sandboxKind": "shared"}, nil), nil, "operation_key_reuse_mismatch"},
		{"2 before 3", row("k", map[string]string{"fingerprint": fp, "sessionId": "w", "sandboxKind": "shared", "sandboxProvider": "cloudflare"}, nil), nil, "sandbox_allocation_retired"},
		{"2 before 4", row("k", map[string]string{"status": "in_progress", "fingerprint": fp, "sessionId": "w", "sandboxKind": "shared"}, live), nil, "sandbox_allocation_retired"},
		{"3 before 4", row("k", map[string]string{"status": "in_progress", "fingerprint": fp, "sessionId": "w", "sandboxId": "ses-" + hex48}, live), nil, "sandbox_runtime_retired"},
		{"4 before 6", row("k", map[string]string{"status": "in_progress", "fingerprint": "other", "sessionId": "w"}, live), nil, "creation_in_progress"},
		{"2: an allocation retired by settings", row("k", map[string]string{"fingerprint": fp, "sessionId": "w", "sandboxAllocation": "vercel-small", "sandboxProvider": "vercel"}, nil),
			[]local.Parameter{{Name: "allocation/retired", Type: "StringList", Value: "vercel-small"}}, "sandbox_allocation_retired"},
		{"3: a provider retired by settings", row("k", map[string]string{"fingerprint": fp, "sessionId": "w", "sandboxAllocation": "vercel-small"}, nil),
			[]local.Parameter{{Name: "provider/retired", Type: "StringList", Value: "vercel"}}, "sandbox_runtime_retired"},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			h := apitest.New(t, nil)
			h.SetSettings(r.settings)
			h.Put(r.row)
			if res := post(h, user, b); res.Code() != r.code {
				t.Errorf("%d %s", res.Status, res.Raw)
			}
		})
	}
}

// TestLedgerDetails: the row a new session writes expires 24 hours after
// its creation; a live lease's Retry-After counts the seconds it has left;
// an expired row does not stand in the way of checks 3 to 6.
func TestLedgerDetails(t *testing.T) {
	h := apitest.New(t, nil)
	before := time.Now()
	if r := post(h, user, body(map[string]any{"operationKey": "k"})); r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	written, err := h.Start.Table.GetLedger(t.Context(), "u1", "k")
	if err != nil {
		t.Fatal(err)
	}
	created, _ := time.Parse(time.RFC3339, written.CreatedAt)
	if written.Status != "completed" || written.ExpiresAt.Sub(created) != 24*time.Hour || created.Before(before.Truncate(time.Second)) {
		t.Errorf("row %+v", written)
	}

	b := body(map[string]any{"operationKey": "lease"})
	h.Put(row2("lease", fingerprint(t, b), map[string]int64{"leaseUntil": time.Now().Add(30 * time.Second).UnixMilli()}))
	if r := post(h, user, b); r.Headers["Retry-After"] != "30" && r.Headers["Retry-After"] != "29" {
		t.Errorf("Retry-After %q for a lease of 30 seconds", r.Headers["Retry-After"])
	}

	retiredBody := body(map[string]any{"operationKey": "old", "runtime": map[string]any{"sandboxAllocation": "cloudflare-single"}})
	h.Put(row("old", map[string]string{"fingerprint": fingerprint(t, retiredBody), "sessionId": "w"}, map[string]int64{"expiresAt": time.Now().Add(-time.Minute).Unix()}))
	if r := post(h, user, retiredBody); r.Code() != "sandbox_runtime_retired" {
		t.Errorf("an expired row judged the start: %d %s", r.Status, r.Raw)
	}
}

func row2(k, fp string, n map[string]int64) []byte {
	return row(k, map[string]string{"status": "in_progress", "fingerprint": fp, "sessionId": "w"}, n)
}

// TestLapsedRowReplacement: rows of older writers whose fingerprint or
// lease is unset are replaced too; concurrent starts on one lapsed row
// create exactly one session, with the recorded id.
func TestLapsedRowReplacement(t *testing.T) {
	b := body(map[string]any{"operationKey": "k"})
	for name, r := range map[string][]byte{
		"no fingerprint": row("k", map[string]string{"status": "failed", "sessionId": "workspace_rec"}, nil),
		"NULL lease":     []byte(strings.Replace(string(row("k", map[string]string{"status": "in_progress", "fingerprint": "x", "sessionId": "workspace_rec"}, nil)), `"SK"`, `"leaseUntil":{"NULL":true},"SK"`, 1)),
	} {
		t.Run(name, func(t *testing.T) {
			h := apitest.New(t, nil)
			h.Put(r)
			if res := post(h, user, b); res.Status != 201 || res.Body["sessionId"] != "workspace_rec" {
				t.Errorf("%d %s", res.Status, res.Raw)
			}
		})
	}
	t.Run("concurrent", func(t *testing.T) {
		h := apitest.New(t, nil)
		h.Put(row("k", map[string]string{"status": "in_progress", "fingerprint": "x", "sessionId": "workspace_rec"}, map[string]int64{"leaseUntil": 1}))
		var wg sync.WaitGroup
		var mu sync.Mutex
		statuses := map[int]int{}
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := post(h, user, b)
				mu.Lock()
				defer mu.Unlock()
				statuses[res.Status]++
				if res.Body["sessionId"] != "workspace_rec" {
					t.Errorf("%d %s", res.Status, res.Raw)
				}
			}()
		}
		wg.Wait()
		if statuses[201] != 1 || statuses[200] != 9 || len(h.Items()) != 2 {
			t.Errorf("statuses %v, %d items", statuses, len(h.Items()))
		}
	})
}

// TestRecordedRowIsJudged: the row this writer records carries the
// session's provider and allocation, so that a replay after they are
// retired is refused by rules 2 and 3, never replayed.
func TestRecordedRowIsJudged(t *testing.T) {
	small := map[string]any{"sandboxAllocation": "vercel-small"}
	for _, r := range []struct {
		rule    string
		runtime map[string]any
		setting local.Parameter
		code    string
	}{
		{"2: the recorded allocation is retired", small, local.Parameter{Name: "allocation/retired", Type: "StringList", Value: "vercel-small"}, "sandbox_allocation_retired"},
		{"3: the recorded allocation's provider is retired", small, local.Parameter{Name: "provider/retired", Type: "StringList", Value: "vercel"}, "sandbox_runtime_retired"},
		// A code-review session records no allocation: only its provider.
		{"3: the recorded provider is retired", map[string]any{"sandboxKind": "code-review"},
			local.Parameter{Name: "provider/retired", Type: "StringList", Value: "cloudflare-containers"}, "sandbox_runtime_retired"},
	} {
		t.Run(r.rule, func(t *testing.T) {
			h := apitest.New(t, nil)
			b := body(map[string]any{"operationKey": "k", "runtime": r.runtime})
			if first := post(h, user, b); first.Status != 201 {
				t.Fatalf("%d %s", first.Status, first.Raw)
			}
			h.SetSettings([]local.Parameter{r.setting})
			if again := post(h, user, b); again.Status != 422 || again.Code() != r.code {
				t.Errorf("%d %s", again.Status, again.Raw)
			}
		})
	}
}
