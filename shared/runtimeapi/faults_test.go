package runtimeapi_test

import (
	"net/http/httptest"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
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
