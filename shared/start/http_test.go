package start_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
)

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
