package start_test

import (
	"context"
	"encoding/json/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/start"
)

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

// TestLedgerRules: the rules that ask the start to read or write the
// table, on rows in the shapes of older writers written straight into it:
// an expired row is written over, rule 5 replaces the row (and the
// replaced row replays), reads the row again when it finds the session,
// and rule 7 reads the session. The rules themselves, each and in their
// order, are ledger.TestRules.
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
		{"5: lapsed lease, no session: afresh with the recorded id", row("k", map[string]string{"status": "in_progress", "fingerprint": "other", "sessionId": "workspace_rec"}, map[string]int64{"leaseUntil": ms(-time.Minute)}), nil, 201, "", "workspace_rec"},
		{"5: failed, no session: afresh with the recorded id", row("k", map[string]string{"status": "failed", "fingerprint": fp, "sessionId": "workspace_rec"}, nil), nil, 201, "", "workspace_rec"},
		{"5 then 7: lapsed lease, the session exists", row("k", map[string]string{"status": "in_progress", "fingerprint": fp, "sessionId": "workspace_x"}, map[string]int64{"leaseUntil": ms(-time.Minute)}), session("workspace_x"), 200, "", "workspace_x"},
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
			if r.status == 201 && r.replay != "" {
				again := post(h, user, b)
				if again.Status != 200 || again.Body["sessionId"] != r.replay {
					t.Errorf("the replaced row does not replay: %d %s", again.Status, again.Raw)
				}
			}
		})
	}
}

// TestRefusedCarriesWhatItRead: a keyed start refused once its key's row
// was judged hands back, beside its refusal, the row it judged and the
// row's session when it read it, so that the firing reads neither again;
// the code is the refusal's.
func TestRefusedCarriesWhatItRead(t *testing.T) {
	b := body(map[string]any{"operationKey": "k"})
	fp := fingerprint(t, b)
	lapsed := map[string]int64{"leaseUntil": time.Now().Add(-time.Minute).UnixMilli()}
	rows := []struct {
		rule     string
		row      []byte // nil: the key has none
		session  []byte
		alloc    string // the request's allocation, "" for none
		code     problem.Code
		read     bool   // the start read the row's session
		recorded string // the session it found, "" for none
	}{
		{"6: another request", row("k", map[string]string{"fingerprint": "other", "sessionId": "workspace_x"}, nil), nil, "", problem.OperationKeyPayloadMismatch, false, ""},
		{"5 then 6: the session exists, another request", row("k", map[string]string{"status": "failed", "fingerprint": "other", "sessionId": "workspace_x"}, lapsed), session("workspace_x"), "", problem.OperationKeyPayloadMismatch, true, "workspace_x"},
		{"7: the session is gone", row("k", map[string]string{"fingerprint": fp, "sessionId": "workspace_x"}, nil), nil, "", problem.NotFound, true, ""},
		{"no row: checks 3 to 6", nil, nil, allocation.CloudflareSingle, problem.SandboxRuntimeRetired, false, ""},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			h := apitest.New(t, nil)
			for _, item := range [][]byte{r.row, r.session} {
				if item != nil {
					h.Put(item)
				}
			}
			req, err := start.ParseRequest([]byte(b), nil)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := allocation.ByName(r.alloc)
			refused, err := h.Start.Start(t.Context(), start.Command{UserID: "u1", Request: req, Allocation: a})
			if err != nil || refused.Kind != ledger.Refused || problem.CodeOf(refused.Refusal) != r.code {
				t.Fatalf("%+v %v", refused, err)
			}
			if (refused.Row != nil) != (r.row != nil) || refused.Row != nil && refused.Row.SessionID != "workspace_x" {
				t.Errorf("row %+v", refused.Row)
			}
			if refused.SessionRead != r.read || (refused.Session != nil) != (r.recorded != "") || refused.Session != nil && refused.Session.SessionID != r.recorded {
				t.Errorf("session read %v: %+v", refused.SessionRead, refused.Session)
			}
		})
	}
}

// TestOwnRow: a row that names the session this start writes is the
// start's own (a write whose answer was lost, and that no retry reported
// as such): the answer is 201 with that session, not a judgment of the row.
func TestOwnRow(t *testing.T) {
	h := apitest.New(t, nil)
	h.Start.NewSessionID = func() string { return "workspace_mine" }
	b := body(map[string]any{"operationKey": "k"})
	h.Put(row("k", map[string]string{"fingerprint": fingerprint(t, b), "sessionId": "workspace_mine"}, nil))
	if res := post(h, user, b); res.Status != 201 || res.Body["sessionId"] != "workspace_mine" {
		t.Errorf("%d %s", res.Status, res.Raw)
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
// create exactly one session, with the recorded id; a start that finds
// the lapsed row's session judges the row that replaced it meanwhile.
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
		if statuses[201] != 1 || statuses[200] != 9 || len(h.Items()) != 4 {
			t.Errorf("statuses %v, %d items", statuses, len(h.Items()))
		}
	})
	t.Run("replaced while it is judged", func(t *testing.T) {
		// Another start replaces the lapsed row, with this request's
		// fingerprint, between this start's refused write and its read of
		// the row's session: the session it finds is the other start's,
		// and the row to judge is the new one, which replays it.
		h, p := apitest.Faulty(t)
		h.Put(row("k", map[string]string{"status": "in_progress", "fingerprint": "x", "sessionId": "workspace_rec"}, map[string]int64{"leaseUntil": 1}))
		put := func(dynamoJSON []byte) {
			item, err := localdb.UnmarshalItem(dynamoJSON)
			if err == nil {
				_, err = h.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(h.Table), Item: item})
			}
			if err != nil {
				t.Error(err)
			}
		}
		p.Inject("GetItem", 1, faultproxy.Before(func() {
			put(session("workspace_rec"))
			put(row("k", map[string]string{"fingerprint": fingerprint(t, b), "sessionId": "workspace_rec"}, nil))
		}))
		if res := post(h, user, b); res.Status != 200 || res.Body["sessionId"] != "workspace_rec" {
			t.Errorf("%d %s", res.Status, res.Raw)
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
		setting settings.Parameter
		code    string
	}{
		{"2: the recorded allocation is retired", small, settings.Parameter{Name: "allocation/retired", Type: "StringList", Value: "vercel-small"}, "sandbox_allocation_retired"},
		{"3: the recorded allocation's provider is retired", small, settings.Parameter{Name: "provider/retired", Type: "StringList", Value: "vercel"}, "sandbox_runtime_retired"},
		// A code-review session records no allocation: only its provider.
		{"3: the recorded provider is retired", map[string]any{"sandboxKind": "code-review"},
			settings.Parameter{Name: "provider/retired", Type: "StringList", Value: "cloudflare-containers"}, "sandbox_runtime_retired"},
	} {
		t.Run(r.rule, func(t *testing.T) {
			h := apitest.New(t, nil)
			b := body(map[string]any{"operationKey": "k", "runtime": r.runtime})
			if first := post(h, user, b); first.Status != 201 {
				t.Fatalf("%d %s", first.Status, first.Raw)
			}
			h.SetSettings([]settings.Parameter{r.setting})
			if again := post(h, user, b); again.Status != 422 || again.Code() != r.code {
				t.Errorf("%d %s", again.Status, again.Raw)
			}
		})
	}
}
