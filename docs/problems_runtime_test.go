package docs_test

import (
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/shared/settings"
)

// absentSession is a session id, well formed, that no table holds; and
// wellFormed a session token's shape, which no session's is.
const (
	absentSession = "workspace_00000000-0000-4000-8000-000000000000"
	wellFormed    = "sst_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
)

// runtimeCall is a runtime route's call with the session token token.
func runtimeCall(method, path, token, body string) apitest.Call {
	return apitest.Call{Method: method, Path: path, Body: body, Headers: map[string]string{"Authorization": "Bearer " + token}}
}

// The runtime routes' ordinary requests, and the calls that make them
// answer what the document's examples say.
func init() {
	const session, claim, report = "GET /v1/runtime/sessions/{sessionId}", "POST /v1/runtime/sessions/{sessionId}/claim", "POST /v1/runtime/sessions/{sessionId}/outcome"
	base := "/v1/runtime/sessions/" + absentSession
	ordinary[session] = runtimeCall("GET", base, wellFormed, "")
	ordinary[claim] = runtimeCall("POST", base+"/claim", wellFormed, `{"runner":"runner-7"}`)
	ordinary[report] = runtimeCall("POST", base+"/outcome", wellFormed, `{"status":"completed"}`)
	for op, c := range map[string]apitest.Call{session: ordinary[session], claim: ordinary[claim], report: ordinary[report]} {
		deeper := c
		deeper.Path = base + "/deeper"
		provokes[op+" not_found"] = fixed(deeper)
	}
	provokes[claim+" invalid_request"] = func(t *testing.T, h *apitest.Harness) apitest.Call {
		id, token := started(t, h, nil)
		return runtimeCall("POST", "/v1/runtime/sessions/"+id+"/claim", token, `{"runner":"a b"}`)
	}
	provokes[report+" invalid_request"] = func(t *testing.T, h *apitest.Harness) apitest.Call {
		id, token := started(t, h, nil)
		return runtimeCall("POST", "/v1/runtime/sessions/"+id+"/outcome", token, `{"status":"completed","runner":"a b"}`)
	}
	provokes[claim+" session_claimed"] = func(t *testing.T, h *apitest.Harness) apitest.Call {
		id, token := started(t, h, nil)
		at(h, "10:00:05")
		claimed(t, h, id, token)
		at(h, "10:30:05")
		claimed(t, h, id, token)
		return runtimeCall("POST", "/v1/runtime/sessions/"+id+"/claim", token, `{"runner":"runner-8"}`)
	}
	provokes[report+" session_claimed"] = func(t *testing.T, h *apitest.Harness) apitest.Call {
		c := provokes[claim+" session_claimed"](t, h)
		c.Path, c.Body = c.Path[:len(c.Path)-len("claim")]+"outcome", `{"status":"completed","runner":"runner-8"}`
		return c
	}
	provokes[report+" outcome_already_recorded"] = func(t *testing.T, h *apitest.Harness) apitest.Call {
		id, token := started(t, h, nil)
		at(h, "10:42:01")
		if r := h.Do(runtimeCall("POST", "/v1/runtime/sessions/"+id+"/outcome", token, `{"status":"completed","endedAt":"2026-12-06T10:42:00Z"}`)); r.Status != 200 {
			t.Fatalf("report: %d %s", r.Status, r.Raw)
		}
		return runtimeCall("POST", "/v1/runtime/sessions/"+id+"/outcome", token, `{"status":"interrupted"}`)
	}
	provokes[claim+" session_ended"] = func(t *testing.T, h *apitest.Harness) apitest.Call {
		c := provokes[report+" outcome_already_recorded"](t, h)
		c.Path, c.Body = c.Path[:len(c.Path)-len("outcome")]+"claim", `{"runner":"runner-7"}`
		return c
	}
	provokes[session+" sandbox_allocation_retired"] = func(t *testing.T, h *apitest.Harness) apitest.Call {
		id, token := started(t, h, allocating("vercel-small"))
		h.SetSettings([]settings.Parameter{{Name: "allocation/retired", Type: "StringList", Value: "vercel-small"}})
		return runtimeCall("GET", "/v1/runtime/sessions/"+id, token, "")
	}
}

// started starts a session of the caller at 10:00 and returns its id and
// token.
func started(t *testing.T, h *apitest.Harness, set map[string]any) (string, string) {
	t.Helper()
	at(h, "10:00:00")
	id := do(t, h, start(set))["sessionId"].(string)
	token, err := h.Tokens.Token(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return id, token
}

// claimed claims the session for runner-7.
func claimed(t *testing.T, h *apitest.Harness, id, token string) {
	t.Helper()
	if r := h.Do(runtimeCall("POST", "/v1/runtime/sessions/"+id+"/claim", token, `{"runner":"runner-7"}`)); r.Status != 200 {
		t.Fatalf("claim: %d %s", r.Status, r.Raw)
	}
}

// at sets the start's and the runtime routes' clocks to hh:mm:ss on
// 2026-12-06, UTC.
func at(h *apitest.Harness, hms string) {
	now, _ := time.Parse(time.RFC3339, "2026-12-06T"+hms+"Z")
	h.Start.Now = func() time.Time { return now }
	h.Runtime.Now = h.Start.Now
}
