package hook_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
)

// TestOrderOfChecks is the contract's order of checks for a delivery,
// one rule a row and in its order: each row breaks its rule (and, named
// "before", a later one too), and the first failure answers. Every 401
// has the same body, and no refusal writes anything.
func TestOrderOfChecks(t *testing.T) {
	h := harness(t)
	hk := newHook(t, h, nil)
	other := newHook(t, h, nil)
	scheduled := h.CreateTrigger(t, map[string]string{"sub": "u1"},
		`{"schedule":{"cron":"0 9 * * 1-5"},"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"m/x"},"prompt":"p"}`)
	body := prBody("opened", "Fix")
	good := func(more map[string]string) map[string]string { return hk.signed(t, "", body, more) }
	big := strings.Repeat(" ", 256<<10+1)
	badUTF8 := "{\"a\":\"\xff\"}"
	rows := []struct {
		rule    string
		path    string
		method  string
		headers map[string]string
		body    string
		base64  bool
		status  int
		code    string
	}{
		{rule: "a path deeper than /v1/hooks/{triggerId} is 404", path: "/v1/hooks/" + hk.ID + "/x", headers: good(nil), body: body, status: 404, code: "not_found"},
		{rule: "another method than POST is 405, before the size", method: "PUT", headers: good(nil), body: big, status: 405, code: "method_not_allowed"},
		{rule: "a body over 256 KiB is 413, before the media type", headers: map[string]string{"Content-Type": "image/png"}, body: big, status: 413, code: "payload_too_large"},
		{rule: "413 is judged as the body arrived: base64 over 256 KiB", headers: good(nil), body: strings.Repeat("a", 200<<10), base64: true, status: 413, code: "payload_too_large"},
		{rule: "a multipart content type is 415, before the proof", headers: map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, body: body, status: 415, code: "unsupported_media_type"},
		{rule: "a Content-Type sent twice is 415 when either type is refused", headers: good(map[string]string{"Content-Type": "application/json,image/png"}), body: body, status: 415, code: "unsupported_media_type"},
		{rule: "application/octet-stream is 415", headers: good(map[string]string{"Content-Type": "application/octet-stream"}), body: body, status: 415, code: "unsupported_media_type"},
		{rule: "a trigger id that is not trg_ and a lowercase UUID is 401", path: "/v1/hooks/" + strings.ToUpper(hk.ID), headers: good(nil), body: body, status: 401, code: "unauthorized"},
		{rule: "an unknown trigger is 401", path: "/v1/hooks/trg_00000000-0000-4000-8000-000000000000", headers: good(nil), body: body, status: 401, code: "unauthorized"},
		{rule: "a scheduled trigger is 401", path: "/v1/hooks/" + scheduled, headers: good(nil), body: body, status: 401, code: "unauthorized"},
		{rule: "no proof is 401", headers: github("push", "d1"), body: body, status: 401, code: "unauthorized"},
		{rule: "a wrong proof is 401", headers: hk.signed(t, "", body+" ", nil), body: body, status: 401, code: "unauthorized"},
		{rule: "another trigger's secret is 401", headers: other.signed(t, "", body, nil), body: body, status: 401, code: "unauthorized"},
		{rule: "a repeated proof header is 401", headers: map[string]string{"X-Hub-Signature-256": good(nil)["x-hub-signature-256"] + "," + good(nil)["x-hub-signature-256"]}, body: body, status: 401, code: "unauthorized"},
		{rule: "a signature of the wrong length is 401", headers: map[string]string{"X-Hub-Signature-256": good(nil)["x-hub-signature-256"][:40]}, body: body, status: 401, code: "unauthorized"},
		{rule: "a huge proof header is 401", headers: map[string]string{"X-Hub-Signature-256": "sha256=" + strings.Repeat("a", 100<<10)}, body: body, status: 401, code: "unauthorized"},
		{rule: "the proof before the body's UTF-8: invalid UTF-8 unproven is 401", headers: good(nil), body: badUTF8, base64: true, status: 401, code: "unauthorized"},
		{rule: "a proven body that is not valid UTF-8 is 400", headers: hk.signed(t, "", badUTF8, nil), body: badUTF8, base64: true, status: 400, code: "invalid_request"},
		{rule: "a delivery header that breaks its rule is 400", headers: good(github("push", "not an id")), body: body, status: 400, code: "invalid_request"},
	}
	var unauthorized string
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			before := len(h.Items())
			c := apitest.Call{Method: "POST", Path: "/v1/hooks/" + hk.ID, Headers: r.headers, Body: r.body, Base64: r.base64}
			if r.path != "" {
				c.Path = r.path
			}
			if r.method != "" {
				c.Method = r.method
			}
			res := h.Deliver(c)
			if res.Status != r.status || res.Code() != r.code {
				t.Fatalf("%d %s, want %d %s", res.Status, res.Raw, r.status, r.code)
			}
			if r.status == 405 && res.Headers["Allow"] != "POST" {
				t.Errorf("Allow %q", res.Headers["Allow"])
			}
			if r.status == 401 {
				delete(res.Body, "requestId")
				b, _ := json.Marshal(res.Body)
				if unauthorized == "" {
					unauthorized = string(b)
				} else if string(b) != unauthorized {
					t.Errorf("401 %s, another 401 was %s", b, unauthorized)
				}
			}
			if after := len(h.Items()); after != before {
				t.Errorf("%d items written", after-before)
			}
		})
	}
}

// TestMalformedID: a trigger id that is not trg_ and a lowercase UUID is
// 401 without a read, nor a KMS call; an unknown one reads, but makes no
// KMS call.
func TestMalformedID(t *testing.T) {
	h := harness(t)
	kms := h.KMS.Calls.Load()
	for _, id := range []string{"trg_1", "agent_x", "trg_9B2E4F61-0C3A-4D8E-B5F7-1A6C3E9D2B40", "trg_{9b2e4f61-0c3a-4d8e-b5f7-1a6c3e9d2b40}"} {
		if res := deliver(h, id, nil, "{}"); res.Status != 401 || res.Requests != 0 {
			t.Errorf("%s: %d after %d requests", id, res.Status, res.Requests)
		}
	}
	if res := deliver(h, "trg_9b2e4f61-0c3a-4d8e-b5f7-1a6c3e9d2b40", nil, "{}"); res.Status != 401 || res.Requests != 1 {
		t.Errorf("unknown: %d after %d requests", res.Status, res.Requests)
	}
	if n := h.KMS.Calls.Load() - kms; n != 0 {
		t.Errorf("%d KMS calls", n)
	}
}

// TestUndecodableBase64: a body the event says is base64 that does not
// decode is 400.
func TestUndecodableBase64(t *testing.T) {
	h := harness(t)
	hk := newHook(t, h, nil)
	ev := apitest.Event(apitest.Call{Method: "POST", Path: "/v1/hooks/" + hk.ID, Body: "%%%"})
	ev.IsBase64Encoded = true
	resp, _ := h.HookAPI.Handle(context.Background(), ev)
	if resp.StatusCode != 400 || !strings.Contains(resp.Body, "invalid_request") {
		t.Errorf("%d %s", resp.StatusCode, resp.Body)
	}
}
