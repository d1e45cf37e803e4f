package runtimeapi_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/infra/local/kms"
	"github.com/cloud-agent/control-plane/shared/secrets"
	"github.com/cloud-agent/control-plane/shared/settings"
)

// TestTokenCache: an execution environment asks KMS once per session.
func TestTokenCache(t *testing.T) {
	h, _ := harness(t, nil)
	r := h.Do(apitest.Call{Method: "POST", Path: "/v1/sessions", Claims: owner,
		Body: `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"m"}}`})
	id := r.Body["sessionId"].(string)
	calls := h.KMS.Calls.Load()
	token := "sst_" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	for range 3 {
		if r := call(h, "GET", "/v1/runtime/sessions/"+id, token, ""); r.Status != 401 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	}
	if n := h.KMS.Calls.Load() - calls; n != 1 {
		t.Errorf("%d KMS calls for one session", n)
	}
}

// TestKMSUnreachable: a token that cannot be derived is 503 with
// Retry-After, and nothing is written.
func TestKMSUnreachable(t *testing.T) {
	h, _ := harness(t, nil)
	id, token := start(t, h, "")
	dead := httptest.NewServer(nil)
	dead.Close()
	h.Runtime.Tokens = secrets.NewSessionTokens(kms.Client(dead.URL), "alias/SessionTokenKey")
	before := h.Snapshot()
	if r := claim(h, id, token, "r1"); r.Status != 503 || r.Headers["Retry-After"] == "" {
		t.Errorf("%d %v %s", r.Status, r.Headers, r.Raw)
	}
	if h.Snapshot() != before {
		t.Error("a claim wrote without its token checked")
	}
}

// TestRetiredAllocation: a session whose allocation is retired since is
// 422 at the launch read: nothing may run it.
func TestRetiredAllocation(t *testing.T) {
	h, _ := harness(t, nil)
	id, token := start(t, h, "")
	h.SetSettings([]settings.Parameter{{Name: "allocation/retired", Type: "StringList", Value: "cloudflare-containers-standard-4"}})
	if r := call(h, "GET", "/v1/runtime/sessions/"+id, token, ""); r.Status != 422 || r.Code() != "sandbox_allocation_retired" {
		t.Errorf("%d %s", r.Status, r.Raw)
	}
}

// TestStorageFaults: a claim or a report whose transaction the table keeps
// refusing is 503 with Retry-After and writes nothing; a lost answer
// (the write applied, its answer dropped) is found again: the retry of the
// SDK or of the route answers what was written, once.
func TestStorageFaults(t *testing.T) {
	h, p := apitest.Faulty(t)
	h.Start.Now = func() time.Time { return started }
	h.Runtime.Now = h.Start.Now
	id, token := start(t, h, "")
	before := h.Snapshot()
	p.InjectEvery("TransactWriteItems", 1, faultproxy.DynamoThrottle)
	for _, r := range []apitest.Result{claim(h, id, token, "r1"), report(h, id, token, `{"status":"completed"}`)} {
		if r.Status != 503 || r.Headers["Retry-After"] == "" {
			t.Errorf("%d %v %s", r.Status, r.Headers, r.Raw)
		}
	}
	if h.Snapshot() != before {
		t.Error("a refused write wrote")
	}
	p.ClearEvery()
	p.Inject("TransactWriteItems", 1, faultproxy.DropAfter)
	if r := report(h, id, token, `{"status":"completed"}`); r.Status != 200 || h.Session(id).Outcome.Revision != 1 {
		t.Errorf("a lost answer: %d %s", r.Status, r.Raw)
	}
}

// TestDecodedBodySize: the 413 is judged on the decoded body (a binary
// body arrives base64-encoded, a third larger), before the token.
func TestDecodedBodySize(t *testing.T) {
	h, _ := harness(t, nil)
	id, _ := start(t, h, "")
	for _, r := range []struct {
		size   int
		status int
	}{{256 << 10, 401}, {256<<10 + 1, 413}} {
		c := apitest.Call{Method: "POST", Path: "/v1/runtime/sessions/" + id + "/claim", Body: strings.Repeat(" ", r.size), Base64: true}
		if res := h.Do(c); res.Status != r.status {
			t.Errorf("%d bytes, base64-encoded: %d %s", r.size, res.Status, res.Raw)
		}
	}
}

// TestBusySession: a claim or a report whose every write meets another
// (a conflict) reads and writes at most twice each, then is 503 with
// Retry-After, having written nothing.
func TestBusySession(t *testing.T) {
	h, p := apitest.Faulty(t)
	h.Start.Now = func() time.Time { return started }
	h.Runtime.Now = h.Start.Now
	id, token := start(t, h, "")
	before := h.Snapshot()
	p.InjectEvery("TransactWriteItems", 1, faultproxy.DynamoConflict)
	defer p.ClearEvery()
	for _, send := range []func() apitest.Result{
		func() apitest.Result { return claim(h, id, token, "r1") },
		func() apitest.Result { return report(h, id, token, `{"status":"completed"}`) },
	} {
		var r apitest.Result
		requests := p.Requests(func() { r = send() })
		if r.Status != 503 || r.Headers["Retry-After"] == "" || requests["GetItem"] != 2 || requests["TransactWriteItems"] != 2 {
			t.Errorf("%d %s, requests %v", r.Status, r.Raw, requests)
		}
	}
	if h.Snapshot() != before {
		t.Error("a busy session was written")
	}
}

// TestUndecodableLaunch: a session whose prompt item does not decode (a
// hand's edit) is as unknown at the launch read: 401, never run without
// its prompt.
func TestUndecodableLaunch(t *testing.T) {
	h, _ := harness(t, nil)
	id, token := start(t, h, "")
	h.SetItem("SESSION#"+id, "PROMPT", "initialTurn", &types.AttributeValueMemberS{Value: "not a map"})
	if r := call(h, "GET", "/v1/runtime/sessions/"+id, token, ""); r.Status != 401 {
		t.Errorf("%d %s", r.Status, r.Raw)
	}
}
