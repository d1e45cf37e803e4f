package gateway_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/gateway"
	"github.com/cloud-agent/control-plane/infra/template"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// badInput is the API of docs/bad-input.md: the handlers on a real table,
// with the local gateway in front of them as the stack runs it.
type badInput struct {
	h   *apitest.Harness
	srv *httptest.Server
}

// answer is one response: its status, its problem code (or ""), its
// headers and its body.
type answer struct {
	status  int
	code    string
	headers http.Header
	body    string
}

func newBadInput(t *testing.T) *badInput {
	t.Helper()
	return newBadInputOn(t, apitest.New(t, nil))
}

// newBadInputOn is the local gateway in front of the harness h.
func newBadInputOn(t *testing.T, h *apitest.Harness) *badInput {
	t.Helper()
	fns, err := template.LoadFunctions("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	routes := template.Routes(fns)
	// Each invocation goes through JSON, as the Lambda runtime passes it.
	invoke := func(ctx context.Context, _ string, event []byte) ([]byte, error) {
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(event, &ev); err != nil {
			return nil, err
		}
		resp, err := h.API.Handle(ctx, ev)
		if err != nil {
			return nil, err
		}
		return json.Marshal(resp)
	}
	srv := httptest.NewServer(&gateway.Gateway{Routes: routes, Invoke: invoke})
	t.Cleanup(srv.Close)
	return &badInput{h: h, srv: srv}
}

// raw sends a request through the gateway byte for byte as given, which
// no HTTP client would: control characters, invalid UTF-8, escapes.
func (b *badInput) raw(t *testing.T, method, target string, headers []string, body string) answer {
	t.Helper()
	conn, err := net.Dial("tcp", b.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var req strings.Builder
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: api.local\r\nConnection: close\r\n", method, target)
	for _, h := range headers {
		req.WriteString(h + "\r\n")
	}
	if body != "" {
		fmt.Fprintf(&req, "Content-Length: %d\r\n", len(body))
	}
	req.WriteString("\r\n" + body)
	if _, err := io.WriteString(conn, req.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, headers: resp.Header, body: string(data)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") && len(data) > 0 {
		var p struct{ Code string }
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatalf("problem %q: %v", data, err)
		}
		a.code = p.Code
	}
	return a
}

// event sends a payload 2.0 event straight to the handlers.
func (b *badInput) event(t *testing.T, ev events.APIGatewayV2HTTPRequest) answer {
	t.Helper()
	resp, err := b.h.API.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, headers: http.Header{}, body: resp.Body}
	for k, v := range resp.Headers {
		a.headers.Set(k, v)
	}
	if resp.Headers["Content-Type"] == "application/problem+json" {
		var p struct{ Code string }
		if err := json.Unmarshal([]byte(resp.Body), &p); err != nil {
			t.Fatalf("problem %q: %v", resp.Body, err)
		}
		a.code = p.Code
	}
	return a
}

// items is the table's items, each with its names sorted, in an order of
// their own.
func (b *badInput) items(t *testing.T) []string {
	t.Helper()
	var items []string
	for _, it := range b.h.Items() {
		var v any
		if err := json.Unmarshal([]byte(it), &v); err != nil {
			t.Fatal(err)
		}
		canon, _ := json.Marshal(v)
		items = append(items, string(canon))
	}
	slices.Sort(items)
	return items
}

var (
	biUser   = map[string]any{"sub": "u1", "org_ids": []string{"o1", "o2"}}
	biClaims = map[string]string{"sub": "u1", "org_ids": "[o1 o2]"}
	// startBody is a valid start with the operation key the seed used:
	// sent again, it is a replay (200) that writes nothing.
	startBody = `{"operationKey":"seed-key","repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"}}`
	keyless   = strings.Replace(startBody, `"operationKey":"seed-key",`, "", 1)
	// promptBody holds control characters in its prompt, which is text.
	promptBody  = `{"operationKey":"prompt-key","repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"initialTurn":{"prompt":"a\u0000b\n\tc\u007f\u0085"}}`
	triggerBody = `{"schedule":{"cron":"0 9 * * 1-5","timezone":"Europe/Berlin"},"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"prompt":"Update the dependencies."}`
)

func bearer(claims map[string]any) string { return "Authorization: Bearer " + gateway.DevToken(claims) }

// ev is the event API Gateway builds for a request of the user with a
// JSON body, before a row changes what it tests.
func ev(method, path, body string) events.APIGatewayV2HTTPRequest {
	return apitest.Event(apitest.Call{Method: method, Path: path, Claims: biClaims, Body: body})
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// padded is startBody padded with spaces inside the object to n bytes.
func padded(n int) string {
	return startBody[:len(startBody)-1] + strings.Repeat(" ", n-len(startBody)) + "}"
}

// TestBadInput is docs/bad-input.md, row by row: each bad input gets the
// answer the table gives it, and changes nothing in the table.
func TestBadInput(t *testing.T) {
	b := newBadInput(t)
	auth := bearer(biUser)
	ctJSON := "Content-Type: application/json"
	// The seed: a session started with an operation key, and a trigger.
	seed := b.raw(t, "POST", "/v1/sessions", []string{auth, ctJSON}, startBody)
	if seed.status != 201 {
		t.Fatalf("seed start: %d %s", seed.status, seed.body)
	}
	var started struct{ SessionID string }
	_ = jsonUnmarshal(seed.body, &started)
	if r := b.raw(t, "POST", "/v1/sessions", []string{auth, ctJSON}, promptBody); r.status != 201 {
		t.Fatalf("seed start with control characters in the prompt: %d %s", r.status, r.body)
	}
	tr := b.raw(t, "POST", "/v1/triggers", []string{auth, ctJSON}, triggerBody)
	if tr.status != 201 {
		t.Fatalf("seed trigger: %d %s", tr.status, tr.body)
	}
	var scheduled struct{ TriggerID string }
	_ = jsonUnmarshal(tr.body, &scheduled)
	session := "/v1/sessions/" + started.SessionID + "/allocation"
	// The hooks' seed: a webhook trigger of each proof, and a delivery
	// to the github one, which sent again is a redelivery (200) that
	// writes nothing.
	gh, std, tok := b.webhookTrigger(t, `{"verify":"github"}`), b.webhookTrigger(t, `{"verify":"standard","events":["push"]}`), b.webhookTrigger(t, `{"verify":"token"}`)
	ghPath, stdPath, tokPath := "/v1/hooks/"+gh.id, "/v1/hooks/"+std.id, "/v1/hooks/"+tok.id
	seedHook := b.raw(t, "POST", ghPath, append(gh.github(hookBody), ctJSON, "X-GitHub-Event: pull_request", "X-GitHub-Delivery: d-seed"), hookBody)
	if seedHook.status != 201 {
		t.Fatalf("seed delivery: %d %s", seedHook.status, seedHook.body)
	}
	var delivered struct{ SessionID string }
	_ = jsonUnmarshal(seedHook.body, &delivered)

	type row struct {
		name   string
		send   func(t *testing.T) answer
		status int
		code   string
		check  func(t *testing.T, a answer) // more about the answer, or nil
	}
	gw := func(method, target string, body string, headers ...string) func(t *testing.T) answer {
		return func(t *testing.T) answer { return b.raw(t, method, target, headers, body) }
	}
	fn := func(e events.APIGatewayV2HTTPRequest) func(t *testing.T) answer {
		return func(t *testing.T) answer { return b.event(t, e) }
	}
	with := func(e events.APIGatewayV2HTTPRequest, change func(e *events.APIGatewayV2HTTPRequest)) events.APIGatewayV2HTTPRequest {
		change(&e)
		return e
	}
	header := func(name, value string) func(e *events.APIGatewayV2HTTPRequest) {
		return func(e *events.APIGatewayV2HTTPRequest) { e.Headers[name] = value }
	}
	detail := func(want string) func(t *testing.T, a answer) {
		return func(t *testing.T, a answer) {
			t.Helper()
			var p struct{ Detail string }
			_ = jsonUnmarshal(a.body, &p)
			if !strings.Contains(p.Detail, want) {
				t.Errorf("detail %q, want it to name %q", p.Detail, want)
			}
		}
	}
	allow := func(want string) func(t *testing.T, a answer) {
		return func(t *testing.T, a answer) {
			if got := a.headers.Get("Allow"); got != want {
				t.Errorf("Allow %q, want %q", got, want)
			}
		}
	}
	// gatewayOwn is an answer of API Gateway itself, as the local gateway
	// gives it: not problem+json.
	gatewayOwn := func(contentType, body string) func(t *testing.T, a answer) {
		return func(t *testing.T, a answer) {
			if got := a.headers.Get("Content-Type"); got != contentType || a.body != body {
				t.Errorf("%s %q, want %s %q", got, a.body, contentType, body)
			}
		}
	}
	internalError := gatewayOwn("application/json", `{"message":"Internal Server Error"}`)
	replayed := func(t *testing.T, a answer) {
		var r struct {
			SessionID string
			Replayed  bool
		}
		_ = jsonUnmarshal(a.body, &r)
		if !r.Replayed || r.SessionID != started.SessionID {
			t.Errorf("not the seed's replay: %s", a.body)
		}
	}
	post := func(body string, headers ...string) func(t *testing.T) answer {
		return gw("POST", "/v1/sessions", body, append([]string{auth}, headers...)...)
	}
	replace := func(old, new string) string { return strings.Replace(startBody, old, new, 1) }
	trig := func(old, new string) string { return strings.Replace(triggerBody, old, new, 1) }
	cursor := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	other := "Authorization: Bearer " + gateway.DevToken(map[string]any{"sub": "u2"})
	const bad, tooLarge = 400, 413
	formType := "Content-Type: application/x-www-form-urlencoded"
	badUTF8 := "{\"a\":\"\xff\"}"
	notProven := detail("The delivery is not proven for this trigger.")
	redelivered := func(t *testing.T, a answer) {
		var r struct {
			SessionID string
			Replayed  bool
		}
		_ = jsonUnmarshal(a.body, &r)
		if !r.Replayed || r.SessionID != delivered.SessionID {
			t.Errorf("not the seed delivery's: %s", a.body)
		}
	}
	pinged := func(t *testing.T, a answer) {
		if a.body != `{"ping":true}` {
			t.Errorf("not a ping's answer: %s", a.body)
		}
	}
	ignoredEvent := func(t *testing.T, a answer) {
		if a.body != `{"ignored":true}` {
			t.Errorf("not an ignored event's answer: %s", a.body)
		}
	}
	// reads is the DynamoDB requests the function's line counts.
	reads := func(n int) func(t *testing.T, a answer) {
		return func(t *testing.T, a answer) {
			var line struct{ DynamodbRequests int }
			_ = jsonUnmarshal(b.h.LastLog(), &line)
			if line.DynamodbRequests != n {
				t.Errorf("%d DynamoDB requests, want %d", line.DynamodbRequests, n)
			}
		}
	}
	both := func(checks ...func(t *testing.T, a answer)) func(t *testing.T, a answer) {
		return func(t *testing.T, a answer) {
			for _, c := range checks {
				c(t, a)
			}
		}
	}
	rows := []row{
		// Headers: Idempotency-Key is the operation key; keyless sent with
		// the seed's key is the seed's replay.
		{"Idempotency-Key with invalid UTF-8", post(keyless, ctJSON, "Idempotency-Key: seed\xffkey"), bad, "invalid_request", detail("Idempotency-Key header must be")},
		{"Idempotency-Key with invalid UTF-8, in the event", fn(with(ev("POST", "/v1/sessions", keyless), header("idempotency-key", "seed\xffkey"))), bad, "invalid_request", detail("Idempotency-Key header must be")},
		{"Idempotency-Key with U+FFFD, as JSON carries invalid UTF-8", fn(with(ev("POST", "/v1/sessions", keyless), header("idempotency-key", "seed\ufffdkey"))), bad, "invalid_request", nil},
		{"Idempotency-Key with a control character", post(keyless, ctJSON, "Idempotency-Key: seed\x01key"), bad, "", nil},
		{"Idempotency-Key with a control character, in the event", fn(with(ev("POST", "/v1/sessions", keyless), header("idempotency-key", "seed\x01key"))), bad, "invalid_request", detail("Idempotency-Key header must be")},
		{"Idempotency-Key with NUL, in the event", fn(with(ev("POST", "/v1/sessions", keyless), header("idempotency-key", "seed\x00key"))), bad, "invalid_request", nil},
		{"Idempotency-Key with a line break, in the event", fn(with(ev("POST", "/v1/sessions", keyless), header("idempotency-key", "seed-key\r\n"))), bad, "invalid_request", nil},
		{"Idempotency-Key with a tab inside", post(keyless, ctJSON, "Idempotency-Key: seed\tkey"), bad, "invalid_request", detail("Idempotency-Key header must be")},
		{"Idempotency-Key with spaces around it", post(keyless, ctJSON, "Idempotency-Key:   seed-key  "), 200, "", replayed},
		{"Idempotency-Key sent twice", post(keyless, ctJSON, "Idempotency-Key: seed-key", "Idempotency-Key: seed-key"), bad, "invalid_request", detail("Idempotency-Key header must be")},
		{"Idempotency-Key empty", post(keyless, ctJSON, "Idempotency-Key:"), bad, "invalid_request", detail("Idempotency-Key header may not be empty")},
		{"Idempotency-Key of 129", post(keyless, ctJSON, "Idempotency-Key: "+strings.Repeat("k", 129)), bad, "invalid_request", detail("Idempotency-Key header must be")},
		{"Idempotency-Key of 20 KB", post(keyless, ctJSON, "Idempotency-Key: "+strings.Repeat("k", 20<<10)), bad, "invalid_request", nil},
		{"Idempotency-Key reserved", post(keyless, ctJSON, "Idempotency-Key: trigger:x"), bad, "invalid_request", detail(`Idempotency-Key header may not start with "trigger:"`)},
		{"Idempotency-Key with a credential marker", post(keyless, ctJSON, "Idempotency-Key: ghp_x"), bad, "invalid_request", detail("secret")},
		{"Idempotency-Key other than operationKey", post(startBody, ctJSON, "Idempotency-Key: other-key"), bad, "invalid_request", detail("must be equal")},
		{"Idempotency-Key in capitals", post(keyless, ctJSON, "IDEMPOTENCY-KEY: seed-key"), 200, "", replayed},
		{"Idempotency-Key on a GET", gw("GET", session, "", auth, "Idempotency-Key: trigger:x"), 200, "", nil},
		{"a header over 2 MB", gw("GET", session, "", auth, "X-Big: "+strings.Repeat("x", 2<<20)), http.StatusRequestHeaderFieldsTooLarge, "", nil},
		// Headers: the body's type.
		{"no Content-Type", post(startBody), 200, "", replayed},
		{"Content-Type text/plain", post(startBody, "Content-Type: text/plain"), 200, "", replayed},
		{"Content-Type of a form (curl -d)", post(startBody, "Content-Type: application/x-www-form-urlencoded"), 200, "", replayed},
		{"Content-Type application/octet-stream", post(startBody, "Content-Type: application/octet-stream"), 200, "", replayed},
		{"Content-Encoding gzip", post(gzipped(startBody), ctJSON, "Content-Encoding: gzip"), bad, "invalid_request", nil},
		{"Accept without JSON", gw("GET", session, "", auth, "Accept: application/xml"), 200, "", nil},
		// Bodies.
		{"empty body", post("", ctJSON), bad, "invalid_request", nil},
		{"white space only", post(" \n\t ", ctJSON), bad, "invalid_request", nil},
		{"null", post("null", ctJSON), bad, "invalid_request", nil},
		{"an array", post("["+startBody+"]", ctJSON), bad, "invalid_request", nil},
		{"a string", post(`"x"`, ctJSON), bad, "invalid_request", nil},
		{"a byte order mark first", post("\ufeff"+startBody, ctJSON), bad, "invalid_request", nil},
		{"a UTF-16 body", post(utf16(startBody), "Content-Type: application/json; charset=utf-16"), bad, "invalid_request", nil},
		{"a trailing newline", post(startBody+"\r\n", ctJSON), 200, "", replayed},
		{"a second value after the object", post(startBody+"{}", ctJSON), bad, "invalid_request", nil},
		{"comments", post("/* x */"+startBody, ctJSON), bad, "invalid_request", nil},
		{"invalid UTF-8 in a member", post(replace(`"github"`, "\"git\xffhub\""), ctJSON), bad, "invalid_request", detail("repository.type")},
		{"a lone surrogate escape", post(replace(`"code"`, `"\ud800"`), ctJSON), bad, "invalid_request", detail("agent.mode")},
		{"a number where a string goes", post(replace(`"code"`, `7`), ctJSON), bad, "invalid_request", detail("agent.mode must be a string")},
		{"an object where a string goes", post(replace(`"seed-key"`, `{}`), ctJSON), bad, "invalid_request", detail("operationKey must be a string")},
		{"a string where an object goes", post(replace(`{"type":"github","repo":"acme/app"}`, `"acme/app"`), ctJSON), bad, "invalid_request", detail("repository must be an object")},
		{"an unknown member", post(replace(`{"operationKey"`, `{"extra":1,"operationKey"`), ctJSON), bad, "invalid_request", detail("extra is not a known member")},
		{"a member in other case", post(replace(`"agent"`, `"Agent"`), ctJSON), bad, "invalid_request", nil},
		{"a repeated member", post(replace(`{"operationKey":"seed-key"`, `{"operationKey":"seed-key","operationKey":"seed-key"`), ctJSON), bad, "invalid_request", detail("operationKey is repeated")},
		{"nested too deep", post(replace(`"seed-key"`, strings.Repeat("[", 20000)+strings.Repeat("]", 20000)), ctJSON), bad, "invalid_request", nil},
		{"a control character escaped in agent.model", post(replace(`"anthropic/claude"`, `"anthropic/\u0000claude"`), ctJSON), bad, "invalid_request", detail("agent.model may not hold control characters")},
		{"a line break in createdOnPlatform", post(replace(`{"operationKey"`, `{"createdOnPlatform":"web\n","operationKey"`), ctJSON), bad, "invalid_request", detail("createdOnPlatform may not hold control characters")},
		{"control characters in the prompt", post(promptBody, ctJSON), 200, "", func(t *testing.T, a answer) {
			if !strings.Contains(a.body, `"replayed":true`) {
				t.Errorf("not a replay: %s", a.body)
			}
		}},
		{"an orgId with bad characters", post(replace(`{"operationKey"`, `{"orgId":"o 1","operationKey"`), ctJSON), bad, "invalid_request", detail("orgId")},
		{"an orgId the caller is not in", post(replace(`{"operationKey"`, `{"orgId":"o3","operationKey"`), ctJSON), 403, "forbidden", nil},
		{"a form", post("repository=acme/app&agent=code", "Content-Type: application/x-www-form-urlencoded"), bad, "invalid_request", nil},
		{"the body at 256 KiB", post(padded(256<<10), ctJSON), 200, "", replayed},
		{"the body 1 byte over 256 KiB", post(padded(256<<10+1), ctJSON), tooLarge, "payload_too_large", nil},
		{"base64, decoded at 256 KiB", fn(with(ev("POST", "/v1/sessions", b64(padded(256<<10))), func(e *events.APIGatewayV2HTTPRequest) { e.IsBase64Encoded = true })), 200, "", replayed},
		{"base64, decoded 1 byte over 256 KiB", fn(with(ev("POST", "/v1/sessions", b64(padded(256<<10+1))), func(e *events.APIGatewayV2HTTPRequest) { e.IsBase64Encoded = true })), tooLarge, "payload_too_large", nil},
		{"1 MiB", post(padded(1<<20), ctJSON), tooLarge, "payload_too_large", nil},
		{"6 MiB, its event over Lambda's 6 MB", post(padded(6<<20), ctJSON), 500, "", internalError},
		{"4.5 MiB not text, its event over Lambda's 6 MB in base64", post(padded(9<<19), "Content-Type: application/octet-stream"), 500, "", internalError},
		{"the body at 10 MB", post(padded(10<<20), ctJSON), 500, "", internalError},
		{"the body 1 byte over 10 MB", post(padded(10<<20+1), ctJSON), tooLarge, "", gatewayOwn("text; charset=utf-8", "HTTP content length exceeded 10485760 bytes.")},
		{"the body 1 byte over 10 MB, without a token", gw("POST", "/v1/sessions", padded(10<<20+1), ctJSON), tooLarge, "", nil},
		{"base64 that says it is not", fn(ev("POST", "/v1/sessions", b64(startBody))), bad, "invalid_request", nil},
		{"not base64 that says it is", fn(with(ev("POST", "/v1/sessions", startBody), func(e *events.APIGatewayV2HTTPRequest) { e.IsBase64Encoded = true })), bad, "invalid_request", detail("base64")},
		{"a body on a GET", gw("GET", session, `{"x":1}`, auth, ctJSON), 200, "", nil},
		{"a body on a GET over 256 KiB", gw("GET", session, padded(256<<10+1), auth, ctJSON), tooLarge, "payload_too_large", nil},
		{"a body on a DELETE", gw("DELETE", "/v1/triggers/trg_none", `{"x":1}`, auth, ctJSON), 404, "not_found", nil},
		{"a trigger body null", gw("POST", "/v1/triggers", "null", auth, ctJSON), bad, "invalid_request", nil},
		{"a trigger body that is an array", gw("POST", "/v1/triggers", "["+triggerBody+"]", auth, ctJSON), bad, "invalid_request", nil},
		{"a trigger's active as a string", gw("POST", "/v1/triggers", trig(`"prompt"`, `"active":"true","prompt"`), auth, ctJSON), bad, "invalid_request", detail("active must be true or false")},
		{"a trigger's schedule as a string", gw("POST", "/v1/triggers", trig(`{"cron":"0 9 * * 1-5","timezone":"Europe/Berlin"}`, `"0 9 * * 1-5"`), auth, ctJSON), bad, "invalid_request", detail("schedule must be an object")},
		{"a trigger's prompt as a number", gw("POST", "/v1/triggers", trig(`"Update the dependencies."`, `5`), auth, ctJSON), bad, "invalid_request", detail("prompt must be a string")},
		{"a trigger's unknown member", gw("POST", "/v1/triggers", trig(`"prompt"`, `"operationKey":"k","prompt"`), auth, ctJSON), bad, "invalid_request", detail("operationKey is not a known member")},
		{"a trigger's zone only the machine knows", gw("POST", "/v1/triggers", trig(`"Europe/Berlin"`, `"localtime"`), auth, ctJSON), bad, "invalid_request", detail("schedule.timezone")},
		// Paths.
		{"an encoded slash in a path id", gw("GET", "/v1/sessions/a%2Fb/allocation", "", auth), bad, "invalid_request", nil},
		{"a slash in a path id, decoded as API Gateway passes it", fn(ev("GET", "/v1/sessions/a/b/allocation", "")), 404, "not_found", nil},
		{"a double-encoded slash, once decoded", fn(ev("GET", "/v1/sessions/a%2Fb/allocation", "")), bad, "invalid_request", nil},
		{"a space in a path id, decoded", fn(ev("GET", "/v1/sessions/a b/allocation", "")), bad, "invalid_request", nil},
		{"non-ASCII in a path id, decoded", fn(ev("GET", "/v1/sessions/workspace_é/allocation", "")), bad, "invalid_request", nil},
		{"an encoded underscore in a path id", gw("GET", "/v1/sessions/"+strings.Replace(started.SessionID, "_", "%5F", 1)+"/allocation", "", auth), bad, "invalid_request", nil},
		{"an invalid escape in the path", gw("GET", "/v1/sessions/a%zz/allocation", "", auth), bad, "", nil},
		{"a path id of 129", gw("GET", "/v1/sessions/"+strings.Repeat("a", 129)+"/allocation", "", auth), bad, "invalid_request", nil},
		{"a trigger id with a dot", gw("GET", "/v1/triggers/trg.x", "", auth), bad, "invalid_request", nil},
		{"a trigger id with a dot, deleted", gw("DELETE", "/v1/triggers/trg.x", "", auth), bad, "invalid_request", nil},
		{"an unknown trigger id", gw("GET", "/v1/triggers/trg_none", "", auth), 404, "not_found", nil},
		{"another caller's session", gw("GET", session, "", other), 404, "not_found", nil},
		{"a trailing slash", gw("POST", "/v1/sessions/", startBody, auth, ctJSON), 404, "not_found", nil},
		{"a double slash", gw("GET", "/v1//allocations", "", auth), 404, "not_found", nil},
		{"a path in other case", gw("GET", "/V1/allocations", "", auth), 404, "not_found", nil},
		{"an unknown route", gw("GET", "/v1/nothing", "", auth), 404, "not_found", nil},
		{"an unknown route without a token", gw("GET", "/v1/nothing", ""), 404, "not_found", nil},
		// Webhook deliveries (no token: the routes have no authorizer).
		{"a delivery over 256 KiB, unsigned", gw("POST", ghPath, hookPadded(256<<10+1), ctJSON), tooLarge, "payload_too_large", nil},
		{"a delivery over 256 KiB of a refused type", gw("POST", ghPath, hookPadded(256<<10+1), "Content-Type: image/png"), tooLarge, "payload_too_large", nil},
		{"a delivery over 256 KiB to a malformed trigger id", gw("POST", "/v1/hooks/x", hookPadded(256<<10+1), ctJSON), tooLarge, "payload_too_large", nil},
		{"a delivery of 200 KiB the gateway base64-encodes", gw("POST", ghPath, hookPadded(200<<10), append(gh.github(hookPadded(200<<10)), formType)...), tooLarge, "payload_too_large", nil},
		{"a delivery base64, decoded 200 KiB, in the event", fn(hookEvent(ghPath, hookPadded(200<<10), true, gh.githubMap(hookPadded(200<<10)))), tooLarge, "payload_too_large", nil},
		{"a delivery at 256 KiB (a ping)", gw("POST", ghPath, hookPadded(256<<10), append(gh.github(hookPadded(256<<10)), ctJSON, "X-GitHub-Event: ping")...), 200, "", pinged},
		{"a delivery the gateway base64-encodes", gw("POST", ghPath, hookBody, append(gh.github(hookBody), formType, "X-GitHub-Event: pull_request", "X-GitHub-Delivery: d-seed")...), 200, "", redelivered},
		{"a delivery base64-encoded, in the event", fn(hookEvent(ghPath, hookBody, true, gh.githubMap(hookBody, "x-github-event", "pull_request"))), 200, "", redelivered},
		{"a delivery whose isBase64Encoded lies, in the event", fn(with(hookEvent(ghPath, hookBody, false, gh.githubMap(hookBody)), func(e *events.APIGatewayV2HTTPRequest) { e.IsBase64Encoded = true })), bad, "invalid_request", detail("base64")},
		{"a delivery not valid UTF-8, signed", gw("POST", ghPath, badUTF8, append(gh.github(badUTF8), ctJSON)...), bad, "invalid_request", detail("UTF-8")},
		{"a delivery not valid UTF-8, unsigned", gw("POST", ghPath, badUTF8, ctJSON), 401, "unauthorized", notProven},
		{"X-GitHub-Delivery not an id", gw("POST", ghPath, hookBody, append(gh.github(hookBody), ctJSON, "X-GitHub-Delivery: not an id")...), bad, "invalid_request", detail("X-GitHub-Delivery header must be")},
		{"X-GitHub-Delivery of 129", gw("POST", ghPath, hookBody, append(gh.github(hookBody), ctJSON, "X-GitHub-Delivery: "+strings.Repeat("d", 129))...), bad, "invalid_request", detail("X-GitHub-Delivery header must be")},
		{"X-GitHub-Delivery sent twice", gw("POST", ghPath, hookBody, append(gh.github(hookBody), ctJSON, "X-GitHub-Delivery: d-seed", "X-GitHub-Delivery: d-seed")...), bad, "invalid_request", detail("X-GitHub-Delivery header must be")},
		{"an X-GitHub-Event not valid UTF-8 (the gateway repairs it to U+FFFD)", gw("POST", ghPath, hookBody, append(gh.github(hookBody), ctJSON, "X-GitHub-Event: pull\xffrequest")...), bad, "invalid_request", detail("x-github-event header is not valid UTF-8")},
		{"an X-GitHub-Event with U+FFFD, in the event", fn(hookEvent(ghPath, hookBody, false, gh.githubMap(hookBody, "x-github-event", "pull\uFFFDrequest"))), bad, "invalid_request", detail("x-github-event header is not valid UTF-8")},
		{"an X-GitHub-Event not valid UTF-8, unsigned", gw("POST", ghPath, hookBody, ctJSON, "X-GitHub-Event: pull\xffrequest"), 401, "unauthorized", notProven},
		{"X-GitHub-Delivery not an id, unsigned", gw("POST", ghPath, hookBody, ctJSON, "X-GitHub-Delivery: not an id"), 401, "unauthorized", notProven},
		{"X-GitHub-Delivery of 128", gw("POST", ghPath, hookBody, append(gh.github(hookBody), ctJSON, "X-GitHub-Delivery: "+strings.Repeat("d", 128))...), 200, "", redelivered},
		{"webhook-id not an id", gw("POST", stdPath, stdBody, append(std.standard(t, "not an id", time.Now(), stdBody), ctJSON)...), bad, "invalid_request", detail("webhook-id header must be")},
		{"X-Gitlab-Event-UUID not an id", gw("POST", tokPath, stdBody, ctJSON, "X-Gitlab-Token: "+tok.secret, "X-Gitlab-Event-UUID: not/an/id"), bad, "invalid_request", detail("X-Gitlab-Event-UUID header must be")},
		{"Idempotency-Key not an id, on a delivery", gw("POST", tokPath, stdBody, ctJSON, "X-Gitlab-Token: "+tok.secret, "Idempotency-Key: "+strings.Repeat("k", 129)), bad, "invalid_request", detail("Idempotency-Key header must be")},
		{"a proof header sent twice", gw("POST", ghPath, hookBody, append(gh.github(hookBody), gh.github(hookBody)[0], ctJSON)...), 401, "unauthorized", notProven},
		{"a proof header of 100 KB", gw("POST", ghPath, hookBody, ctJSON, "X-Hub-Signature-256: sha256="+strings.Repeat("a", 100<<10)), 401, "unauthorized", notProven},
		{"a signature of the wrong length", gw("POST", ghPath, hookBody, ctJSON, gh.github(hookBody)[0][:60]), 401, "unauthorized", notProven},
		{"a signature in base64", gw("POST", ghPath, hookBody, ctJSON, "X-Hub-Signature-256: sha256="+base64.StdEncoding.EncodeToString(hmacOf(gh.secret, hookBody))), 401, "unauthorized", notProven},
		{"a signature in uppercase hex", gw("POST", ghPath, hookBody, ctJSON, strings.ToUpper(gh.github(hookBody)[0])), 401, "unauthorized", notProven},
		{"a signature without sha256=", gw("POST", ghPath, hookBody, ctJSON, "X-Hub-Signature-256: "+hex.EncodeToString(hmacOf(gh.secret, hookBody))), 401, "unauthorized", notProven},
		{"a standard signature that is not base64", gw("POST", stdPath, stdBody, append(std.standard(t, "d1", time.Now(), stdBody)[:2], ctJSON, "webhook-signature: v1,not*base64")...), 401, "unauthorized", notProven},
		{"a webhook-timestamp 6 minutes old", gw("POST", stdPath, stdBody, append(std.standard(t, "d1", time.Now().Add(-6*time.Minute), stdBody), ctJSON)...), 401, "unauthorized", notProven},
		{"a webhook-timestamp 6 minutes ahead", gw("POST", stdPath, stdBody, append(std.standard(t, "d1", time.Now().Add(6*time.Minute), stdBody), ctJSON)...), 401, "unauthorized", notProven},
		{"a webhook-timestamp in milliseconds", gw("POST", stdPath, stdBody, append(std.standard(t, "d1", time.Unix(time.Now().UnixMilli(), 0), stdBody), ctJSON)...), 401, "unauthorized", notProven},
		{"a webhook-timestamp 4 minutes old", gw("POST", stdPath, stdBody, append(std.standard(t, "d1", time.Now().Add(-4*time.Minute), stdBody), ctJSON)...), 202, "", ignoredEvent},
		{"a malformed trigger id", gw("POST", "/v1/hooks/"+strings.ToUpper(gh.id), hookBody, append(gh.github(hookBody), ctJSON)...), 401, "unauthorized", both(notProven, reads(0))},
		{"a trigger id that is a session's", gw("POST", "/v1/hooks/"+started.SessionID, hookBody, append(gh.github(hookBody), ctJSON)...), 401, "unauthorized", both(notProven, reads(0))},
		{"an unknown trigger id", gw("POST", "/v1/hooks/trg_00000000-0000-4000-8000-000000000000", hookBody, append(gh.github(hookBody), ctJSON)...), 401, "unauthorized", notProven},
		{"a scheduled trigger's id", gw("POST", "/v1/hooks/"+scheduled.TriggerID, hookBody, append(gh.github(hookBody), ctJSON)...), 401, "unauthorized", notProven},
		{"another trigger's secret", gw("POST", ghPath, hookBody, append(tok.github(hookBody), ctJSON)...), 401, "unauthorized", notProven},
		{"another proof than the trigger's", gw("POST", ghPath, hookBody, ctJSON, "X-Gitlab-Token: "+gh.secret), 401, "unauthorized", notProven},
		{"a delivery of multipart/form-data", gw("POST", ghPath, hookBody, append(gh.github(hookBody), "Content-Type: multipart/form-data; boundary=x")...), 415, "unsupported_media_type", nil},
		{"a delivery of image/png", gw("POST", ghPath, hookBody, append(gh.github(hookBody), "Content-Type: image/png")...), 415, "unsupported_media_type", nil},
		{"a delivery of application/octet-stream", gw("POST", ghPath, hookBody, append(gh.github(hookBody), "Content-Type: application/octet-stream")...), 415, "unsupported_media_type", nil},
		{"a delivery of application/pdf", gw("POST", ghPath, hookBody, append(gh.github(hookBody), "Content-Type: application/pdf")...), 415, "unsupported_media_type", nil},
		{"a delivery of application/zip", gw("POST", ghPath, hookBody, append(gh.github(hookBody), "Content-Type: application/zip")...), 415, "unsupported_media_type", nil},
		{"a delivery of a refused type in capitals", gw("POST", ghPath, hookBody, append(gh.github(hookBody), "Content-Type: IMAGE/PNG; x=1")...), 415, "unsupported_media_type", nil},
		{"a delivery with Content-Type twice, the second refused", gw("POST", ghPath, hookBody, append(gh.github(hookBody), "Content-Type: application/json", "Content-Type: image/png")...), 415, "unsupported_media_type", nil},
		{"a delivery of a refused type, unsigned", gw("POST", ghPath, hookBody, "Content-Type: video/mp4"), 415, "unsupported_media_type", nil},
		{"a delivery of text/plain (a ping)", gw("POST", ghPath, hookBody, append(gh.github(hookBody), "Content-Type: text/plain", "X-GitHub-Event: ping")...), 200, "", pinged},
		{"a delivery without Content-Type (a ping)", gw("POST", ghPath, hookBody, append(gh.github(hookBody), "X-GitHub-Event: ping")...), 200, "", pinged},
		{"another method on a hook", gw("PUT", ghPath, hookBody, append(gh.github(hookBody), ctJSON)...), 405, "method_not_allowed", allow("POST")},
		{"GET on a hook", gw("GET", ghPath, ""), 405, "method_not_allowed", allow("POST")},
		{"a path deeper than a hook", gw("POST", ghPath+"/x", hookBody, append(gh.github(hookBody), ctJSON)...), 404, "not_found", nil},
		{"a path deeper than a hook, another method", gw("GET", ghPath+"/x/y", ""), 404, "not_found", nil},
		{"a hook without an id", gw("POST", "/v1/hooks/", hookBody, append(gh.github(hookBody), ctJSON)...), 404, "not_found", nil},
		// Methods.
		{"another method without a token", gw("DELETE", "/v1/sessions", ""), 401, "unauthorized", nil},
		{"another method", gw("DELETE", "/v1/sessions", "", auth), 405, "method_not_allowed", allow("POST")},
		{"another method on the triggers", gw("PUT", "/v1/triggers", "", auth), 405, "method_not_allowed", allow("GET, POST")},
		{"HEAD on a GET route", gw("HEAD", "/v1/allocations", "", auth), 405, "", allow("GET")},
		{"OPTIONS without a token (a CORS preflight)", gw("OPTIONS", "/v1/sessions", "", "Origin: https://x.example", "Access-Control-Request-Method: POST"), 401, "unauthorized", nil},
		// Query strings.
		{"limit twice", gw("GET", "/v1/triggers?limit=1&limit=2", "", auth), bad, "invalid_request", nil},
		{"limit=0", gw("GET", "/v1/triggers?limit=0", "", auth), bad, "invalid_request", nil},
		{"limit=101", gw("GET", "/v1/triggers?limit=101", "", auth), bad, "invalid_request", nil},
		{"limit=abc", gw("GET", "/v1/triggers?limit=abc", "", auth), bad, "invalid_request", nil},
		{"limit=-1", gw("GET", "/v1/triggers?limit=-1", "", auth), bad, "invalid_request", nil},
		{"limit empty", gw("GET", "/v1/triggers?limit=", "", auth), bad, "invalid_request", nil},
		{"limit=+5", gw("GET", "/v1/triggers?limit=%2B5", "", auth), bad, "invalid_request", nil},
		{"limit=05", gw("GET", "/v1/triggers?limit=05", "", auth), bad, "invalid_request", nil},
		{"limit=1e1", gw("GET", "/v1/triggers?limit=1e1", "", auth), bad, "invalid_request", nil},
		{"limit=100", gw("GET", "/v1/triggers?limit=100", "", auth), 200, "", nil},
		{"outcome empty", gw("GET", "/v1/triggers/"+scheduled.TriggerID+"/runs?outcome=", "", auth), bad, "invalid_request", detail("outcome must be running, completed, failed, interrupted or timed_out.")},
		{"outcome unknown", gw("GET", "/v1/triggers/"+scheduled.TriggerID+"/runs?outcome=fired", "", auth), bad, "invalid_request", nil},
		{"outcome in other case", gw("GET", "/v1/triggers/"+scheduled.TriggerID+"/runs?outcome=Running", "", auth), bad, "invalid_request", nil},
		{"outcome twice", gw("GET", "/v1/triggers/"+scheduled.TriggerID+"/runs?outcome=running&outcome=failed", "", auth), bad, "invalid_request", detail("outcome must be")},
		{"outcome=running", gw("GET", "/v1/triggers/"+scheduled.TriggerID+"/runs?outcome=running", "", auth), 200, "", nil},
		{"a cursor that is not base64url", gw("GET", "/v1/triggers?cursor=abc!", "", auth), bad, "invalid_request", nil},
		{"a cursor of padded base64", gw("GET", "/v1/triggers?cursor="+base64.URLEncoding.EncodeToString([]byte(`{"id":"trg_a","createdAt":"2026-11-30T10:00:00Z"}`)), "", auth), bad, "invalid_request", nil},
		{"a cursor that is not JSON", gw("GET", "/v1/triggers?cursor="+cursor("x"), "", auth), bad, "invalid_request", nil},
		{"a cursor with a bad id", gw("GET", "/v1/triggers?cursor="+cursor(`{"id":"a/b","createdAt":"2026-11-30T10:00:00Z"}`), "", auth), bad, "invalid_request", nil},
		{"a cursor with a bad time", gw("GET", "/v1/triggers?cursor="+cursor(`{"id":"trg_a","createdAt":"yesterday"}`), "", auth), bad, "invalid_request", nil},
		{"a cursor empty", gw("GET", "/v1/triggers?cursor=", "", auth), bad, "invalid_request", nil},
		{"a cursor twice", gw("GET", "/v1/triggers?cursor="+cursor(`{"id":"trg_a","createdAt":"2026-11-30T10:00:00Z"}`)+"&cursor="+cursor(`{"id":"trg_a","createdAt":"2026-11-30T10:00:00Z"}`), "", auth), bad, "invalid_request", nil},
		{"a cursor made by hand", gw("GET", "/v1/triggers?cursor="+cursor(`{"id":"trg_a","createdAt":"2026-11-30T10:00:00Z"}`), "", auth), 200, "", nil},
		{"orgId twice", gw("GET", "/v1/allocations?orgId=o1&orgId=o2", "", auth), bad, "invalid_request", nil},
		{"orgId with a slash", gw("GET", "/v1/allocations?orgId=o%2F1", "", auth), bad, "invalid_request", nil},
		{"orgId with a space", gw("GET", "/v1/allocations?orgId=o+1", "", auth), bad, "invalid_request", nil},
		{"orgId with an invalid escape", gw("GET", "/v1/allocations?orgId=%zz", "", auth), bad, "invalid_request", nil},
		{"orgId empty", gw("GET", "/v1/allocations?orgId=", "", auth), bad, "invalid_request", nil},
		{"orgId of another org", gw("GET", "/v1/allocations?orgId=o3", "", auth), 403, "forbidden", nil},
		{"an unknown query parameter", gw("GET", "/v1/allocations?orgid=o3&x=%zz", "", auth), 200, "", nil},
		{"a query on a POST", gw("POST", "/v1/sessions?orgId=o3&operationKey=x", startBody, auth, ctJSON), 200, "", replayed},
		// The caller.
		{"no token", gw("GET", "/v1/allocations", ""), 401, "unauthorized", nil},
		{"a token that is not a JWT", gw("GET", "/v1/allocations", "", "Authorization: Bearer abc"), 401, "unauthorized", nil},
		{"a token without sub", gw("GET", "/v1/allocations", "", bearer(map[string]any{"org_ids": []string{"o1"}})), 401, "unauthorized", nil},
		{"a sub with a space", gw("GET", "/v1/allocations", "", bearer(map[string]any{"sub": "u 1"})), 401, "unauthorized", nil},
		{"a sub with a slash", gw("GET", "/v1/allocations", "", bearer(map[string]any{"sub": "u/1"})), 401, "unauthorized", nil},
		{"a sub with a control character", gw("GET", "/v1/allocations", "", bearer(map[string]any{"sub": "u\n1"})), 401, "unauthorized", nil},
		{"a sub of 129", gw("GET", "/v1/allocations", "", bearer(map[string]any{"sub": strings.Repeat("u", 129)})), 401, "unauthorized", nil},
		{"an org id with a bad character", gw("GET", "/v1/allocations", "", bearer(map[string]any{"sub": "u1", "org_ids": []string{"o1", "o#2"}})), 401, "unauthorized", nil},
		{"a bot_id empty", gw("GET", "/v1/allocations", "", bearer(map[string]any{"sub": "u1", "bot_id": ""})), 401, "unauthorized", nil},
		{"no authorizer in the event", fn(with(ev("GET", "/v1/allocations", ""), func(e *events.APIGatewayV2HTTPRequest) { e.RequestContext.Authorizer = nil })), 401, "unauthorized", nil},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			before := b.items(t)
			a := r.send(t)
			t.Logf("%d %s", a.status, a.body)
			if a.status != r.status || a.code != r.code {
				t.Errorf("%d %q, want %d %q: %s", a.status, a.code, r.status, r.code, a.body)
			}
			if r.check != nil {
				r.check(t, a)
			}
			if after := b.items(t); !slices.Equal(before, after) {
				t.Errorf("the table changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// hookBody is a GitHub pull request event's body; stdBody a Standard
// Webhooks event that the standard trigger does not list.
const (
	hookBody = `{"action":"opened","pull_request":{"title":"Fix"}}`
	stdBody  = `{"type":"order.created"}`
)

// hookPadded is hookBody padded with spaces inside the object to n bytes.
func hookPadded(n int) string {
	return hookBody[:len(hookBody)-1] + strings.Repeat(" ", n-len(hookBody)) + "}"
}

// hooked is a webhook trigger as its create answered it: its id and its
// secret, which only that answer shows.
type hooked struct{ id, secret string }

// webhookTrigger creates a webhook trigger of the user through the
// gateway (POST /v1/triggers with webhook).
func (b *badInput) webhookTrigger(t *testing.T, webhook string) hooked {
	t.Helper()
	body := strings.Replace(triggerBody, `"schedule":{"cron":"0 9 * * 1-5","timezone":"Europe/Berlin"}`, `"webhook":`+webhook, 1)
	r := b.raw(t, "POST", "/v1/triggers", []string{bearer(biUser), "Content-Type: application/json"}, body)
	var tr struct {
		TriggerID string
		Webhook   struct{ Secret string }
	}
	_ = jsonUnmarshal(r.body, &tr)
	if r.status != 201 || tr.Webhook.Secret == "" {
		t.Fatalf("seed webhook trigger: %d %s", r.status, r.body)
	}
	return hooked{tr.TriggerID, tr.Webhook.Secret}
}

// hmacOf is the HMAC-SHA256 of body keyed with the whole secret string,
// as GitHub signs.
func hmacOf(secret, body string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return m.Sum(nil)
}

// github is GitHub's signature header of body under the trigger's
// secret, as a header line.
func (hk hooked) github(body string) []string {
	return []string{"X-Hub-Signature-256: sha256=" + hex.EncodeToString(hmacOf(hk.secret, body))}
}

// githubMap is the signature and more headers (name, value, ...) as
// an event holds them.
func (hk hooked) githubMap(body string, more ...string) map[string]string {
	m := map[string]string{"x-hub-signature-256": "sha256=" + hex.EncodeToString(hmacOf(hk.secret, body))}
	for i := 0; i+1 < len(more); i += 2 {
		m[more[i]] = more[i+1]
	}
	return m
}

// standard is the Standard Webhooks headers of body, id and the
// timestamp at, signed with the trigger's secret: webhook-id,
// webhook-timestamp and webhook-signature, in that order.
func (hk hooked) standard(t *testing.T, id string, at time.Time, body string) []string {
	t.Helper()
	h, err := webhook.DeliveryProof(webhook.VerifyStandard, hk.secret, id, at, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return []string{"webhook-id: " + h["webhook-id"], "webhook-timestamp: " + h["webhook-timestamp"], "webhook-signature: " + h["webhook-signature"]}
}

// hookEvent is the event API Gateway builds for a delivery to path, with
// the body base64-encoded when b64 is set: no authorizer.
func hookEvent(path, body string, b64 bool, headers map[string]string) events.APIGatewayV2HTTPRequest {
	return apitest.Event(apitest.Call{Method: "POST", Path: path, Headers: headers, Body: body, Base64: b64})
}

// utf16 is s in UTF-16LE with its byte order mark, as some Windows tools
// send text.
func utf16(s string) string {
	out := []byte{0xff, 0xfe}
	for _, r := range s {
		out = append(out, byte(r), byte(r>>8))
	}
	return string(out)
}

// gzipped is s compressed with gzip.
func gzipped(s string) string {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return buf.String()
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
