package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json/v2"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/problem"
)

func event(method, path string, claims map[string]string, body string) events.APIGatewayV2HTTPRequest {
	ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: path, Body: body, Headers: map[string]string{}}
	ev.RequestContext.HTTP.Method = method
	ev.RequestContext.RequestID = "req-1"
	if claims != nil {
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
		}
	}
	return ev
}

// TestCallerFrom: sub is required; org_ids comes as a JSON array string, the
// gateway's [a b], or a list separated by commas or spaces; the exact token
// cloud-agent:admin makes an admin; a malformed claim is unauthorized.
func TestCallerFrom(t *testing.T) {
	rows := []struct {
		rule   string
		claims map[string]string
		orgs   []string
		admin  bool
		bot    string
		fail   bool
	}{
		{"sub alone", map[string]string{"sub": "u1"}, nil, false, "", false},
		{"org_ids as a JSON array string", map[string]string{"sub": "u1", "org_ids": `["o1","o2"]`}, []string{"o1", "o2"}, false, "", false},
		{"org_ids as the gateway renders an array", map[string]string{"sub": "u1", "org_ids": `[o1 o2]`}, []string{"o1", "o2"}, false, "", false},
		{"org_ids comma separated", map[string]string{"sub": "u1", "org_ids": `o1,o2`}, []string{"o1", "o2"}, false, "", false},
		{"org_ids space separated", map[string]string{"sub": "u1", "org_ids": `o1 o2`}, []string{"o1", "o2"}, false, "", false},
		{"empty org_ids", map[string]string{"sub": "u1", "org_ids": `[]`}, nil, false, "", false},
		{"admin scope", map[string]string{"sub": "u1", "scope": "openid cloud-agent:admin"}, nil, true, "", false},
		{"admin must be the exact token", map[string]string{"sub": "u1", "scope": "cloud-agent:admins cloud-agent:admin:x"}, nil, false, "", false},
		{"bot id", map[string]string{"sub": "u1", "bot_id": "b-1"}, nil, false, "b-1", false},
		{"no sub", map[string]string{"org_ids": "o1"}, nil, false, "", true},
		{"malformed sub", map[string]string{"sub": "u 1"}, nil, false, "", true},
		{"sub too long", map[string]string{"sub": strings.Repeat("u", 129)}, nil, false, "", true},
		{"malformed org id", map[string]string{"sub": "u1", "org_ids": `["o/1"]`}, nil, false, "", true},
		{"malformed bot id", map[string]string{"sub": "u1", "bot_id": "b#1"}, nil, false, "", true},
		{"empty bot id", map[string]string{"sub": "u1", "bot_id": ""}, nil, false, "", true},
		{"empty org id in a JSON array", map[string]string{"sub": "u1", "org_ids": `["o1",""]`}, nil, false, "", true},
		{"unclosed rendering", map[string]string{"sub": "u1", "org_ids": `[o1 o2`}, nil, false, "", true},
		{"invalid UTF-8 in a JSON array", map[string]string{"sub": "u1", "org_ids": "[\"o1\",\"o\xff\"]"}, nil, false, "", true},
		{"a lone surrogate in a JSON array", map[string]string{"sub": "u1", "org_ids": `["o1","\ud800"]`}, nil, false, "", true},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			ev := event("GET", "/", r.claims, "")
			c, err := callerFrom(&ev)
			if r.fail {
				if problem.CodeOf(err) != problem.Unauthorized {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(c.OrgIDs, ",") != strings.Join(r.orgs, ",") || c.Admin != r.admin || c.BotID != r.bot || c.UserID != "u1" {
				t.Errorf("caller %+v", c)
			}
		})
	}
	ev := event("GET", "/", nil, "")
	ev.Headers["authorization"] = "Bearer x"
	if _, err := callerFrom(&ev); problem.CodeOf(err) != problem.Unauthorized {
		t.Error("no authorizer claims must be unauthorized, whatever the header says")
	}
}

// TestOwns: the same user, and an org the caller is in.
func TestOwns(t *testing.T) {
	c := Caller{UserID: "u1", OrgIDs: []string{"o1"}}
	if !c.Owns("u1", "") || !c.Owns("u1", "o1") || c.Owns("u1", "o2") || c.Owns("u2", "") {
		t.Error("ownership")
	}
}

type result struct {
	status  int
	headers map[string]string
	body    map[string]any
	log     string
}

func serve(t *testing.T, api func(*slog.Logger) *API, ev events.APIGatewayV2HTTPRequest) result {
	t.Helper()
	var logs bytes.Buffer
	resp, err := api(slog.New(slog.NewJSONHandler(&logs, nil))).Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if resp.Body != "" {
		if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
			t.Fatalf("body %q: %v", resp.Body, err)
		}
	}
	if resp.Headers["Cache-Control"] != "no-store" {
		t.Errorf("Cache-Control %q", resp.Headers["Cache-Control"])
	}
	return result{resp.StatusCode, resp.Headers, body, logs.String()}
}

func testAPI(log *slog.Logger) *API {
	echo := func(ctx context.Context, r *Request) (Response, error) {
		if r.Params["id"] == "warn" {
			invocation.Warn(ctx, "setting ignored: something")
		}
		return Response{Status: 200, Body: map[string]any{"id": r.Params["id"], "len": len(r.Body)}}, nil
	}
	open := func(ctx context.Context, r *Request) (Response, error) {
		invocation.Note(ctx, slog.String("opened", r.Params["id"]))
		return Response{Status: 200, Body: map[string]any{"id": r.Params["id"], "decoded": r.Body != nil, "arrived": len(r.Event.Body)}}, nil
	}
	fail := func(_ context.Context, r *Request) (Response, error) {
		switch r.Params["id"] {
		case "busy":
			return Response{}, &problem.Error{Code: problem.CreationInProgress, Detail: "wait", RetryAfter: 1500 * time.Millisecond}
		case "down":
			return Response{}, problem.Wrap(problem.ServiceUnavailable, "later", io.ErrUnexpectedEOF)
		case "panic":
			panic("handler bug")
		}
		return Response{}, io.ErrClosedPipe
	}
	return New(log,
		Route{Method: "GET", Pattern: "/v1/things/{id}", Handle: echo},
		Route{Method: "DELETE", Pattern: "/v1/things/{id}", Handle: echo},
		Route{Method: "POST", Pattern: "/v1/things", Handle: echo},
		Route{Method: "GET", Pattern: "/v1/fail/{id}", Handle: fail},
		Route{Method: "POST", Pattern: "/v1/open/{id}", Handle: open, Public: true},
	)
}

// TestOrderOfChecks: an unknown route (404) comes before the caller (401),
// which comes before another method on a known path (405 with Allow) and
// the body size (413).
func TestOrderOfChecks(t *testing.T) {
	user := map[string]string{"sub": "u1"}
	big := strings.Repeat("x", MaxBody+1)
	rows := []struct {
		rule   string
		ev     events.APIGatewayV2HTTPRequest
		status int
		code   string
	}{
		{"unknown route is 404, even without a caller", event("GET", "/v1/nothing", nil, ""), 404, "not_found"},
		{"trailing slash is another path", event("GET", "/v1/things/a/", user, ""), 404, "not_found"},
		{"known path, other method without a caller is 401", event("PUT", "/v1/things/a", nil, ""), 401, "unauthorized"},
		{"known path, other method without a valid caller is 401", event("PUT", "/v1/things/a", map[string]string{"sub": "bad id"}, ""), 401, "unauthorized"},
		{"known path, other method with a caller is 405", event("PUT", "/v1/things/a", user, ""), 405, "method_not_allowed"},
		{"no caller is 401, even with a body too large", event("POST", "/v1/things", nil, big), 401, "unauthorized"},
		{"a body over 256 KiB is 413", event("POST", "/v1/things", user, big), 413, "payload_too_large"},
		{"a body of exactly 256 KiB passes", event("POST", "/v1/things", user, big[1:]), 200, ""},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			res := serve(t, testAPI, r.ev)
			if res.status != r.status || (r.code != "" && res.body["code"] != r.code) {
				t.Fatalf("got %d %v", res.status, res.body)
			}
			if r.status == 405 && res.headers["Allow"] != "DELETE, GET" {
				t.Errorf("Allow %q", res.headers["Allow"])
			}
		})
	}
}

// TestPublicRoute: a public route has no caller: its handler runs without
// one, another method of its path is 405 without one, and the body comes
// to the handler as it arrived, undecoded and unjudged, whatever its
// size. What the handler notes joins the line.
func TestPublicRoute(t *testing.T) {
	big := strings.Repeat("x", MaxBody+1)
	res := serve(t, testAPI, event("POST", "/v1/open/a", nil, big))
	if res.status != 200 || res.body["decoded"] != false || res.body["arrived"] != float64(len(big)) {
		t.Errorf("no caller, a big body: %d %v", res.status, res.body)
	}
	if !strings.Contains(res.log, `"opened":"a"`) {
		t.Errorf("the handler's note is not on the line: %s", res.log)
	}
	res = serve(t, testAPI, event("GET", "/v1/open/a", nil, ""))
	if res.status != 405 || res.headers["Allow"] != "POST" {
		t.Errorf("another method without a caller: %d %v %v", res.status, res.headers, res.body)
	}
	if res := serve(t, testAPI, event("POST", "/v1/open/a/b", nil, "")); res.status != 404 {
		t.Errorf("a deeper path: %d", res.status)
	}
}

// TestBase64Body: a base64 body is decoded before its size is judged.
func TestBase64Body(t *testing.T) {
	ev := event("POST", "/v1/things", map[string]string{"sub": "u1"}, base64.StdEncoding.EncodeToString([]byte("hello")))
	ev.IsBase64Encoded = true
	if res := serve(t, testAPI, ev); res.status != 200 || res.body["len"] != float64(5) {
		t.Errorf("got %d %v", res.status, res.body)
	}
	ev.Body = "%%%"
	if res := serve(t, testAPI, ev); res.status != 400 {
		t.Errorf("bad base64: %d", res.status)
	}
}

// TestProblems: problem+json with type, title, status, code, detail and the
// request id; Retry-After on 503 and where the error asks for it; the cause
// of an unexpected error is logged, never shown.
func TestProblems(t *testing.T) {
	user := map[string]string{"sub": "u1"}
	res := serve(t, testAPI, event("GET", "/v1/fail/busy", user, ""))
	want := map[string]any{"type": "about:blank", "title": "Conflict", "status": float64(409), "code": "creation_in_progress", "detail": "wait", "requestId": "req-1"}
	if len(res.body) != len(want) || res.headers["Content-Type"] != "application/problem+json" || res.headers["Retry-After"] != "2" {
		t.Errorf("got %v %v", res.headers, res.body)
	}
	for k, v := range want {
		if res.body[k] != v {
			t.Errorf("%s = %v, want %v", k, res.body[k], v)
		}
	}
	res = serve(t, testAPI, event("GET", "/v1/fail/down", user, ""))
	if res.status != 503 || res.headers["Retry-After"] == "" || res.body["detail"] != "later" {
		t.Errorf("503: %v %v", res.headers, res.body)
	}
	res = serve(t, testAPI, event("GET", "/v1/fail/other", user, ""))
	if res.status != 500 || res.body["code"] != "internal_error" || strings.Contains(res.body["detail"].(string), "pipe") {
		t.Errorf("500: %v", res.body)
	}
	if !strings.Contains(res.log, "closed pipe") || !strings.Contains(res.log, `"requestId":"req-1"`) {
		t.Errorf("log %s", res.log)
	}
	res = serve(t, testAPI, event("GET", "/v1/fail/panic", user, ""))
	if res.status != 500 || res.body["code"] != "internal_error" || strings.Contains(res.log, "handler bug") ||
		!strings.Contains(res.log, "panic of type string") || !strings.Contains(res.log, "testAPI") {
		t.Errorf("a panic: %d %v %s", res.status, res.body, res.log)
	}
}

// TestLogLine: one JSON line per invocation with the route, the status, the
// code, the latency, the DynamoDB request count and the warnings; never
// the body.
func TestLogLine(t *testing.T) {
	res := serve(t, testAPI, event("POST", "/v1/things", map[string]string{"sub": "u1"}, `{"prompt":"secret words"}`))
	lines := strings.Split(strings.TrimSpace(res.log), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines", len(lines))
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"requestId", "route", "status", "latencyMs", "dynamodbRequests"} {
		if _, ok := line[k]; !ok {
			t.Errorf("no %s in %s", k, lines[0])
		}
	}
	if line["route"] != "POST /v1/things" || strings.Contains(lines[0], "secret") {
		t.Errorf("line %s", lines[0])
	}
	// A warning met on the way (a setting ignored) joins the line.
	res = serve(t, testAPI, event("GET", "/v1/things/warn", map[string]string{"sub": "u1"}, ""))
	if lines := strings.Split(strings.TrimSpace(res.log), "\n"); len(lines) != 1 || !strings.Contains(lines[0], `"warnings":["setting ignored: something"]`) {
		t.Errorf("lines %v", lines)
	}
}
