package runtimeapi_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/testkit"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

var (
	owner   = map[string]string{"sub": "u1"}
	started = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
)

// harness is the API with the start's and the runtime routes' clocks at
// *clock.
func harness(t *testing.T, b *dynamotest.Backend) (*apitest.Harness, *time.Time) {
	t.Helper()
	h := apitest.New(t, b)
	clock := started
	h.Start.Now = func() time.Time { return clock }
	h.Runtime.Now = func() time.Time { return clock }
	return h, &clock
}

// start starts a session of u1 and returns its id and token.
func start(t *testing.T, h *apitest.Harness, more string) (id, token string) {
	t.Helper()
	r := h.Do(apitest.Call{Method: "POST", Path: "/v1/sessions", Claims: owner,
		Body: `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"m"},"initialTurn":{"prompt":"Fix it."}` + more + `}`})
	if r.Status != 201 {
		t.Fatalf("start: %d %s", r.Status, r.Raw)
	}
	id = r.Body["sessionId"].(string)
	token, err := h.Tokens.Token(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return id, token
}

// call calls a runtime route of session id with token.
func call(h *apitest.Harness, method, path, token, body string) apitest.Result {
	c := apitest.Call{Method: method, Path: path, Body: body}
	if token != "" {
		c.Headers = map[string]string{"Authorization": "Bearer " + token}
	}
	return h.Do(c)
}

func claim(h *apitest.Harness, id, token, runner string) apitest.Result {
	return call(h, "POST", "/v1/runtime/sessions/"+id+"/claim", token, `{"runner":"`+runner+`"}`)
}

func report(h *apitest.Harness, id, token, body string) apitest.Result {
	return call(h, "POST", "/v1/runtime/sessions/"+id+"/outcome", token, body)
}

// TestLaunchRead: what a session was started with, its environment's
// secret as the ciphertext, its key and context that KMS Decrypt needs;
// no claim, no outcome yet.
func TestLaunchRead(t *testing.T) {
	h, _ := harness(t, nil)
	env := h.CreateEnvironment(t, owner, `{"name":"web","variables":{"NODE_ENV":{"value":"production"},"NPM_TOKEN":{"value":"s3cret","secret":true}},"setupCommands":["npm ci"]}`)
	id, token := start(t, h, `,"environmentId":"`+env+`"`)
	r := call(h, "GET", "/v1/runtime/sessions/"+id, token, "")
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	if r.Body["initialTurn"].(map[string]any)["prompt"] != "Fix it." || r.Body["claim"] != nil || r.Body["outcome"] != nil || r.Body["trigger"] != nil {
		t.Errorf("%s", r.Raw)
	}
	e := r.Body["environment"].(map[string]any)
	vars := e["variables"].(map[string]any)
	secret := vars["NPM_TOKEN"].(map[string]any)
	if testkit.JSON(vars["NODE_ENV"]) != `{"value":"production"}` || e["environmentId"] != env || testkit.JSON(e["setupCommands"]) != `["npm ci"]` ||
		secret["keyId"] != h.KMS.Keys.Key("EnvironmentSecretsKey").ARN() || testkit.JSON(secret["encryptionContext"]) != `{"environmentId":"`+env+`","variable":"NPM_TOKEN"}` {
		t.Errorf("environment %s", testkit.JSON(e))
	}
	ct, err := base64.StdEncoding.DecodeString(secret["ciphertext"].(string))
	if err != nil || len(ct) == 0 || strings.Contains(r.Raw, "s3cret") || strings.Contains(string(ct), "s3cret") {
		t.Errorf("the secret's ciphertext %q: %v", secret["ciphertext"], err)
	}
}

// TestClaimAndReport: the first claim wins and the same runner's claim is
// a heartbeat that moves the deadline; another runner is 409 with the
// claim; the claiming runner's report is recorded once, the same report
// again is 200, a different one 409 with the outcome; a finished session
// cannot be claimed; the lookup shows the outcome. A claim and a report
// cost one read and one transaction; a report replayed, one read.
func TestClaimAndReport(t *testing.T) {
	h, clock := harness(t, nil)
	id, token := start(t, h, "")
	r := claim(h, id, token, "r1")
	if r.Status != 200 || testkit.JSON(r.Body["claim"]) != `{"claimedAt":"2026-12-06T10:00:00Z","heartbeatAt":"2026-12-06T10:00:00Z","runner":"r1"}` ||
		r.Body["deadline"] != "2026-12-06T13:00:00Z" || r.Requests != 2 {
		t.Fatalf("claim: %d %s, %d requests", r.Status, r.Raw, r.Requests)
	}
	if again := claim(h, id, token, "r1"); again.Status != 200 || again.Raw != r.Raw || again.Requests != 1 {
		t.Errorf("the same claim in the same second: %d %s, %d requests, want one read", again.Status, again.Raw, again.Requests)
	}
	*clock = started.Add(time.Hour)
	if r := claim(h, id, token, "r1"); r.Status != 200 || r.Body["deadline"] != "2026-12-06T14:00:00Z" ||
		r.Body["claim"].(map[string]any)["heartbeatAt"] != "2026-12-06T11:00:00Z" {
		t.Errorf("heartbeat: %d %s", r.Status, r.Raw)
	}
	if live := liveEntry(h, id); !strings.Contains(live, `"nextRunAt":{"S":"2026-12-06T11:00:00Z"}`) || !strings.Contains(live, `"dueShard":{"S":"LIVE#`) {
		t.Errorf("the heartbeat's live entry: %s", live)
	}
	if r := claim(h, id, token, "r2"); r.Status != 409 || r.Code() != "session_claimed" || r.Body["claim"].(map[string]any)["runner"] != "r1" {
		t.Errorf("another runner: %d %s", r.Status, r.Raw)
	}
	if r := report(h, id, token, `{"status":"completed"}`); r.Status != 409 || r.Code() != "session_claimed" {
		t.Errorf("a report without the claim's runner: %d %s", r.Status, r.Raw)
	}
	done := `{"status":"failed","runner":"r1","error":{"code":"tests_failed","message":"token ghp_abc leaked"}}`
	r = report(h, id, token, done)
	want := `{"endedAt":"2026-12-06T11:00:00Z","error":{"code":"tests_failed","message":"token [redacted] leaked"},"reportedAt":"2026-12-06T11:00:00Z","status":"failed"}`
	if r.Status != 200 || testkit.JSON(r.Body["outcome"]) != want || r.Requests != 2 {
		t.Fatalf("report: %d %s, %d requests", r.Status, r.Raw, r.Requests)
	}
	if live := liveEntry(h, id); live != "" {
		t.Errorf("a live entry after the outcome: %s", live)
	}
	if r := report(h, id, token, done); r.Status != 200 || testkit.JSON(r.Body["outcome"]) != want || r.Requests != 1 {
		t.Errorf("the same report again: %d %s, %d requests", r.Status, r.Raw, r.Requests)
	}
	if r := report(h, id, token, `{"status":"completed","runner":"r1"}`); r.Status != 409 || r.Code() != "outcome_already_recorded" || testkit.JSON(r.Body["outcome"]) != want {
		t.Errorf("another report: %d %s", r.Status, r.Raw)
	}
	if r := claim(h, id, token, "r1"); r.Status != 409 || r.Code() != "session_ended" {
		t.Errorf("a claim of an ended session: %d %s", r.Status, r.Raw)
	}
	look := h.Do(apitest.Call{Method: "GET", Path: "/v1/sessions/" + id + "/allocation", Claims: owner})
	if testkit.JSON(look.Body["outcome"]) != want {
		t.Errorf("the lookup: %s", look.Raw)
	}
}

// liveEntry is the session's live entry in DynamoDB JSON, "" for none.
func liveEntry(h *apitest.Harness, id string) string {
	for _, it := range h.Items() {
		if strings.Contains(it, `"SESSION#`+id+`"`) && strings.Contains(it, `"SK":{"S":"LIVE"}`) {
			return it
		}
	}
	return ""
}

// TestUnauthorized: every failure of identity is the same 401 and writes
// nothing; a malformed id or header reads nothing, an unknown or legacy
// session asks KMS nothing.
func TestUnauthorized(t *testing.T) {
	h, clock := harness(t, nil)
	id, token := start(t, h, "")
	_, otherToken := start(t, h, "")
	// A session whose token this execution environment never derived:
	// the wrong token is found wrong by asking KMS.
	fresh := h.Do(apitest.Call{Method: "POST", Path: "/v1/sessions", Claims: owner,
		Body: `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"m"}}`}).Body["sessionId"].(string)
	h.Put([]byte(`{"PK":{"S":"SESSION#workspace_0b8f3a1e-8a51-4c1b-9a57-3e0b3c2d1f01"},"SK":{"S":"METADATA"},"userId":{"S":"u1"},"sessionId":{"S":"workspace_0b8f3a1e-8a51-4c1b-9a57-3e0b3c2d1f01"},"version":{"N":"1"},"timestamp":{"N":"1764496800000"}}`))
	legacy := "workspace_0b8f3a1e-8a51-4c1b-9a57-3e0b3c2d1f01"
	legacyToken, _ := h.Tokens.Token(context.Background(), legacy)
	before := h.Snapshot()
	for _, r := range []struct {
		rule          string
		id, header    string
		reads, useKMS bool
	}{
		{"no Authorization", id, "", false, false},
		{"another scheme", id, "Basic " + token, false, false},
		{"a repeated header", id, "Bearer " + token + ", Bearer " + token, false, false},
		{"a token of another shape", id, "Bearer sst_short", false, false},
		{"an id that is not a session's", "workspace_X", "Bearer " + token, false, false},
		{"an unknown session", "workspace_0b8f3a1e-8a51-4c1b-9a57-3e0b3c2d1f09", "Bearer " + token, true, false},
		{"a legacy session", legacy, "Bearer " + legacyToken, true, false},
		{"another session's token", fresh, "Bearer " + otherToken, true, true},
	} {
		t.Run(r.rule, func(t *testing.T) {
			calls := h.KMS.Calls.Load()
			c := apitest.Call{Method: "GET", Path: "/v1/runtime/sessions/" + r.id}
			if r.header != "" {
				c.Headers = map[string]string{"Authorization": r.header}
			}
			res := h.Do(c)
			if res.Status != 401 || res.Code() != "unauthorized" || res.Body["detail"] != "The session token is not valid for this session." {
				t.Errorf("%d %s", res.Status, res.Raw)
			}
			if (res.Requests > 0) != r.reads {
				t.Errorf("%d DynamoDB requests", res.Requests)
			}
			if used := h.KMS.Calls.Load() > calls; used != r.useKMS {
				t.Errorf("KMS asked: %v", used)
			}
		})
	}
	*clock = started.Add(8*24*time.Hour + time.Second)
	if r := call(h, "GET", "/v1/runtime/sessions/"+id, token, ""); r.Status != 401 {
		t.Errorf("a token past its life: %d %s", r.Status, r.Raw)
	}
	if h.Snapshot() != before {
		t.Error("a 401 wrote")
	}
}

// TestOrderOfChecks: a path not listed is 404, another method 405 with
// Allow, a body over 256 KiB 413, all before the token; a body that
// breaks its rules is 400 after it.
func TestOrderOfChecks(t *testing.T) {
	h, _ := harness(t, nil)
	id, token := start(t, h, "")
	for _, r := range []struct {
		rule, method, path, body string
		status                   int
		allow                    string
	}{
		{"a path not listed", "GET", "/v1/runtime/sessions/" + id + "/other", "", 404, ""},
		{"another method on the session", "POST", "/v1/runtime/sessions/" + id, "", 405, "GET"},
		{"another method on the claim", "GET", "/v1/runtime/sessions/" + id + "/claim", "", 405, "POST"},
		{"a body over 256 KiB", "POST", "/v1/runtime/sessions/" + id + "/claim", strings.Repeat("x", 256<<10+1), 413, ""},
		{"a claim without a runner", "POST", "/v1/runtime/sessions/" + id + "/claim", `{}`, 400, ""},
		{"a runner out of its characters", "POST", "/v1/runtime/sessions/" + id + "/claim", `{"runner":"a b"}`, 400, ""},
		{"an unknown member", "POST", "/v1/runtime/sessions/" + id + "/claim", `{"runner":"r","x":1}`, 400, ""},
		{"an unknown status", "POST", "/v1/runtime/sessions/" + id + "/outcome", `{"status":"done"}`, 400, ""},
		{"an error on a completed run", "POST", "/v1/runtime/sessions/" + id + "/outcome", `{"status":"completed","error":{"code":"x","message":"m"}}`, 400, ""},
		{"an end too far ahead", "POST", "/v1/runtime/sessions/" + id + "/outcome", `{"status":"failed","endedAt":"2026-12-06T10:01:01Z"}`, 400, ""},
		{"an end before the start", "POST", "/v1/runtime/sessions/" + id + "/outcome", `{"status":"failed","endedAt":"2026-12-06T09:59:59Z"}`, 400, ""},
	} {
		for _, tok := range []string{"", token} {
			res := call(h, r.method, r.path, tok, r.body)
			want := r.status
			if tok == "" && want == 400 {
				want = 401 // the token comes before the body
			}
			if res.Status != want || res.Headers["Allow"] != r.allow {
				t.Errorf("%s (token %v): %d %v %s", r.rule, tok != "", res.Status, res.Headers, res.Raw)
			}
		}
	}
}
