package start_test

import (
	"encoding/base64"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local"
	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/shared/store"
)

// TestFingerprintKnownAnswer pins the fingerprint to an independently
// computed RFC 8785 SHA-256, so that rows of other writers keep matching:
// the operation key and default sandboxKind are left out, a byoc object
// stays an object, a kilo object becomes its name, non-ASCII and U+2028
// are written as they are.
func TestFingerprintKnownAnswer(t *testing.T) {
	rows := []struct {
		rule, body, want string
	}{
		{"every member", `{"operationKey":"k","orgId":"o1","repository":{"type":"github","repo":"acme/app","branch":"main"},` +
			`"agent":{"mode":"code","model":"m","variant":"v"},"initialTurn":{"prompt":"h\u00e9llo <&> \u2028 \ud83d\ude00"},` +
			`"runtime":{"sandboxAllocation":{"provider":{"id":"vercel","account":"byoc"},"instanceType":"small"},"sandboxKind":"isolated"},` +
			`"createdOnPlatform":"web"}`, "b018ad4fa1f1816b441a156b987dfd3e646f25f75276ef240945ceb48bfa9092"},
		{"a kilo object is its name", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},` +
			`"runtime":{"sandboxAllocation":{"provider":{"id":"vercel","account":"kilo"},"instanceType":"small"}},"initialTurn":{}}`,
			"94be08fbd757d93a3647b7eb016b25fbd2d1774561e6cb46fbfa63e00b00fd85"},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			if got := fingerprint(t, r.body); got != r.want {
				t.Errorf("fingerprint %s, want %s", got, r.want)
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

// TestCallerRules: an admin may read any session, nothing else: it cannot
// start a session in an org it is not in. The Idempotency-Key header is
// judged like the body's key.
func TestCallerRules(t *testing.T) {
	h := apitest.New(t, nil)
	admin := map[string]string{"sub": "root", "scope": "cloud-agent:admin"}
	if r := post(h, admin, body(map[string]any{"orgId": "o1"})); r.Code() != "forbidden" {
		t.Errorf("admin in a foreign org: %d %s", r.Status, r.Raw)
	}
	if r := h.Do(apitest.Call{Method: "GET", Path: "/v1/allocations?orgId=o1", Claims: admin}); r.Code() != "forbidden" {
		t.Errorf("admin listing a foreign org: %d %s", r.Status, r.Raw)
	}
	for _, key := range []string{"ghp_123", "", "a b"} {
		r := h.Do(apitest.Call{Method: "POST", Path: "/v1/sessions", Claims: user, Body: body(nil), Headers: map[string]string{"Idempotency-Key": key}})
		if r.Code() != "invalid_request" {
			t.Errorf("Idempotency-Key %q: %d %s", key, r.Status, r.Raw)
		}
	}
	if r := post(h, user, body(map[string]any{"runtime": map[string]any{"sandboxKind": ""}})); r.Code() != "invalid_request" {
		t.Errorf("empty sandboxKind: %d %s", r.Status, r.Raw)
	}
	if len(h.Items()) != 0 {
		t.Error("a refused start wrote")
	}
}

// TestDecodedBodySize: the 256 KiB limit is on the decoded body: a base64
// body longer than that whose decoded form fits is judged on its content.
func TestDecodedBodySize(t *testing.T) {
	h := apitest.New(t, nil)
	prompt := strings.Repeat("p", 200<<10)
	raw := body(map[string]any{"initialTurn": map[string]any{"prompt": prompt[:100000]}, "createdOnPlatform": "cli"})
	padded := raw[:len(raw)-1] + strings.Repeat(" ", 200<<10-len(raw)) + "}"
	ev := apitest.Event(apitest.Call{Method: "POST", Path: "/v1/sessions", Claims: user, Body: base64.StdEncoding.EncodeToString([]byte(padded))})
	ev.IsBase64Encoded = true
	if len(ev.Body) <= 256<<10 {
		t.Fatal("the encoded body should be over the limit")
	}
	resp, _ := h.API.Handle(t.Context(), ev)
	if resp.StatusCode != 201 {
		t.Errorf("%d %s", resp.StatusCode, resp.Body)
	}
	over := padded[:len(padded)-1] + strings.Repeat(" ", 56<<10+1) + "}"
	if r := post(h, user, over); r.Status != 413 || r.Code() != "payload_too_large" {
		t.Errorf("a decoded body over 256 KiB: %d %s", r.Status, r.Raw)
	}
}

// TestStorageFaultsThatAreNotTransient: a DynamoDB error a retry cannot
// mend (here a table that does not exist) is internal_error, not 503.
func TestStorageFaultsThatAreNotTransient(t *testing.T) {
	b := dynamotest.Backends(t)[0]
	c := local.DynamoClient(b.URL, store.Counting)
	h := apitest.NewOn(t, c, c, "NoSuchTable")
	for _, k := range []string{"", "k"} {
		set := map[string]any{}
		if k != "" {
			set["operationKey"] = k
		}
		r := post(h, user, body(set))
		if r.Status != 500 || r.Code() != "internal_error" || r.Headers["Retry-After"] != "" {
			t.Errorf("key %q: %d %v %s", k, r.Status, r.Headers, r.Raw)
		}
		noInternals(t, h, r)
	}
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
