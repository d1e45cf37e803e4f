package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cloud-agent/control-plane/infra/template"
)

// recorder is an Invoker that keeps the events and answers with reply.
type recorder struct {
	events []events.APIGatewayV2HTTPRequest
	raw    [][]byte
	fn     []string
	reply  string
	err    error
}

func (r *recorder) invoke(_ context.Context, id string, event []byte) ([]byte, error) {
	var ev events.APIGatewayV2HTTPRequest
	_ = json.Unmarshal(event, &ev)
	r.events, r.raw, r.fn = append(r.events, ev), append(r.raw, event), append(r.fn, id)
	return []byte(r.reply), r.err
}

// templateRoutes are the routes of template.yaml.
func templateRoutes(t *testing.T) []template.Route {
	t.Helper()
	fns, err := template.LoadFunctions("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return template.Routes(fns)
}

func testGateway(t *testing.T, rec *recorder) *httptest.Server {
	t.Helper()
	routes := templateRoutes(t)
	g := &Gateway{Routes: routes, Scheduled: map[string]bool{"FireFunction": true}, Invoke: rec.invoke,
		Now: func() time.Time { return time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC) }}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return srv
}

const okReply = `{"statusCode":201,"headers":{"Location":"/x","Cache-Control":"no-store"},"body":"{\"ok\":true}","cookies":["c=1"]}`

// TestGatewayEvent: the gateway routes by the template and builds the
// payload 2.0 event API Gateway would: route key, raw path and query,
// path parameters, lower-cased headers, cookies, the claims from the
// bearer token's payload with arrays rendered "[a b]", the request
// context; and it writes the function's response back.
func TestGatewayEvent(t *testing.T) {
	rec := &recorder{reply: okReply}
	srv := testGateway(t, rec)
	token := DevToken(map[string]any{"sub": "u1", "org_ids": []string{"o1", "o2"}, "exp": 1, "scope": "a cloud-agent:admin"})
	req, _ := http.NewRequest("GET", srv.URL+"/v1/sessions/workspace_a%2Db/allocation?x=1&x=2&y=%20z", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Custom", "v")
	req.AddCookie(&http.Cookie{Name: "k", Value: "v"})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 || string(body) != `{"ok":true}` || resp.Header.Get("Location") != "/x" || resp.Header.Get("Set-Cookie") != "c=1" {
		t.Errorf("response %d %s %v", resp.StatusCode, body, resp.Header)
	}
	if len(rec.events) != 1 || rec.fn[0] != "AllocationLookupFunction" {
		t.Fatalf("invocations %v", rec.fn)
	}
	ev := rec.events[0]
	claims := ev.RequestContext.Authorizer.JWT.Claims
	checks := map[string][2]any{
		"version":     {ev.Version, "2.0"},
		"routeKey":    {ev.RouteKey, "GET /v1/sessions/{sessionId}/allocation"},
		"rawPath":     {ev.RawPath, "/v1/sessions/workspace_a%2Db/allocation"},
		"rawQuery":    {ev.RawQueryString, "x=1&x=2&y=%20z"},
		"query x":     {ev.QueryStringParameters["x"], "1,2"},
		"query y":     {ev.QueryStringParameters["y"], " z"},
		"path param":  {ev.PathParameters["sessionId"], "workspace_a-b"},
		"header":      {ev.Headers["x-custom"], "v"},
		"cookie":      {strings.Join(ev.Cookies, ";"), "k=v"},
		"sub":         {claims["sub"], "u1"},
		"org_ids":     {claims["org_ids"], "[o1 o2]"},
		"exp":         {claims["exp"], "1"},
		"scopes":      {strings.Join(ev.RequestContext.Authorizer.JWT.Scopes, " "), "a cloud-agent:admin"},
		"method":      {ev.RequestContext.HTTP.Method, "GET"},
		"ctx route":   {ev.RequestContext.RouteKey, "GET /v1/sessions/{sessionId}/allocation"},
		"stage":       {ev.RequestContext.Stage, "$default"},
		"time":        {ev.RequestContext.Time, "30/Nov/2026:10:00:00 +0000"},
		"base64":      {ev.IsBase64Encoded, false},
		"request id?": {ev.RequestContext.RequestID != "", true},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
	var raw map[string]any
	_ = json.Unmarshal(rec.raw[0], &raw)
	if _, ok := raw["headers"].(map[string]any)["Authorization"]; ok {
		t.Error("header names must be lower-cased")
	}
}

// TestGatewayEventDetails: no scope claim is null scopes; the request time
// is in UTC; a token without the Bearer prefix is taken; each query pair is
// decoded on its own, one that does not decode kept as sent; large
// integers in claims keep their digits.
func TestGatewayEventDetails(t *testing.T) {
	rec := &recorder{reply: okReply}
	routes := templateRoutes(t)
	berlin, _ := time.LoadLocation("Europe/Berlin")
	srv := httptest.NewServer(&Gateway{Routes: routes, Invoke: rec.invoke,
		Now: func() time.Time { return time.Date(2026, 11, 30, 11, 0, 0, 0, berlin) }})
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/v1/allocations?orgId=x;y&bad=%zz&e=", nil)
	req.Header.Set("Authorization", DevToken(map[string]any{"sub": "u1", "n": json.Number("9007199254740993")}))
	if _, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	if len(rec.events) != 1 {
		t.Fatal("a token without the Bearer prefix was refused")
	}
	ev := rec.events[0]
	var raw map[string]any
	_ = json.Unmarshal(rec.raw[0], &raw)
	jwt := raw["requestContext"].(map[string]any)["authorizer"].(map[string]any)["jwt"].(map[string]any)
	if _, has := jwt["scopes"]; has && jwt["scopes"] != nil {
		t.Errorf("scopes %v without a scope claim", jwt["scopes"])
	}
	for name, c := range map[string][2]string{
		"time":     {ev.RequestContext.Time, "30/Nov/2026:10:00:00 +0000"},
		"orgId":    {ev.QueryStringParameters["orgId"], "x;y"},
		"bad":      {ev.QueryStringParameters["bad"], "%zz"},
		"empty":    {ev.QueryStringParameters["e"], ""},
		"big":      {ev.RequestContext.Authorizer.JWT.Claims["n"], "9007199254740993"},
		"raw path": {ev.RawPath, "/v1/allocations"},
	} {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", name, c[0], c[1])
		}
	}
}

// TestGatewayBodies: a JSON or text body passes as it is; a binary one, a
// form, and one without a content type arrive base64-encoded.
func TestGatewayBodies(t *testing.T) {
	rec := &recorder{reply: okReply}
	srv := testGateway(t, rec)
	token := DevToken(map[string]any{"sub": "u1"})
	for _, c := range []struct {
		contentType, body string
		base64            bool
	}{
		{"application/json", `{"a":"é"}`, false},
		{"text/plain; charset=utf-8", "hello", false},
		{"application/octet-stream", "\x00\x01", true},
		{"application/x-www-form-urlencoded", "a=1", true},
		{"", `{"a":1}`, true},
		{"text/plain", "\xff", true},
	} {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/sessions", strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+token)
		if c.contentType != "" {
			req.Header.Set("Content-Type", c.contentType)
		} else {
			req.Header["Content-Type"] = nil
		}
		if _, err := http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		}
		ev := rec.events[len(rec.events)-1]
		if ev.IsBase64Encoded != c.base64 || (!c.base64 && ev.Body != c.body) {
			t.Errorf("%s: base64 %v body %q", c.contentType, ev.IsBase64Encoded, ev.Body)
		}
	}
}

// TestGatewayAnswers: the gateway's own answers are problem+json: an
// unknown route is 404; a missing or undecodable token on a route behind
// the authorizer is 401 without invoking anything; a route without the
// authorizer needs no token; a failed invocation is 502.
func TestGatewayAnswers(t *testing.T) {
	rec := &recorder{reply: okReply}
	srv := testGateway(t, rec)
	do := func(method, path, authorization string) (int, map[string]any, string) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body, resp.Header.Get("Content-Type")
	}
	rows := []struct {
		rule          string
		method, path  string
		authorization string
		status        int
		code          string
		invoked       string
	}{
		{"unknown route", "GET", "/v1/nothing", "", 404, "not_found", ""},
		{"unclean path", "GET", "/v1//allocations", "", 404, "not_found", ""},
		{"no token", "GET", "/v1/allocations", "", 401, "unauthorized", ""},
		{"not a JWT", "GET", "/v1/allocations", "Bearer abc", 401, "unauthorized", ""},
		{"payload not JSON", "GET", "/v1/allocations", "Bearer a.bm90IGpzb24.c", 401, "unauthorized", ""},
		{"another method without a token is 401, before 405", "DELETE", "/v1/allocations", "", 401, "unauthorized", ""},
		{"another method with a token reaches the function", "DELETE", "/v1/allocations", "Bearer " + DevToken(map[string]any{"sub": "u1"}), 201, "", "AllocationLookupFunction"},
		{"a token", "GET", "/v1/allocations", "Bearer " + DevToken(map[string]any{"sub": "u1"}), 201, "", "AllocationLookupFunction"},
		{"a hook route needs no token", "POST", "/v1/hooks/trg_a", "", 201, "", "TriggerHookFunction"},
		{"a hook's bearer secret reaches the function as it is", "POST", "/v1/hooks/trg_a", "Bearer whsec_not-a-jwt", 201, "", "TriggerHookFunction"},
		{"another method of a hook reaches the function", "GET", "/v1/hooks/trg_a", "", 201, "", "TriggerHookFunction"},
		{"a path deeper than a hook reaches the function by the greedy route", "POST", "/v1/hooks/trg_a/more/still", "", 201, "", "TriggerHookFunction"},
		{"the hooks' folder itself is no route", "POST", "/v1/hooks", "", 404, "not_found", ""},
		{"an empty segment under the hooks is no route", "POST", "/v1/hooks/trg_a//x", "", 404, "not_found", ""},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			before := len(rec.fn)
			status, body, ct := do(r.method, r.path, r.authorization)
			if status != r.status || (r.code != "" && (body["code"] != r.code || ct != "application/problem+json")) {
				t.Errorf("%d %v %s", status, body, ct)
			}
			invoked := ""
			if len(rec.fn) > before {
				invoked = rec.fn[len(rec.fn)-1]
			}
			if invoked != r.invoked {
				t.Errorf("invoked %q", invoked)
			}
		})
	}
	rec.err = errors.New("boom")
	if status, body, _ := do("GET", "/v1/allocations", "Bearer "+DevToken(map[string]any{"sub": "u1"})); status != 502 || body["code"] != "internal_error" {
		t.Errorf("failed invocation: %d %v", status, body)
	}
}

// TestGatewaySchedule: POST /_local/schedule/<LogicalId> invokes a
// scheduled function with the Scheduled Event of now or the given time,
// and answers with its result; 404 for a function without a schedule, 400
// for a bad time or one more than 5 minutes ahead of the clock (which the
// firing would ignore), 502 when the function fails.
func TestGatewaySchedule(t *testing.T) {
	rec := &recorder{reply: `{"due":0}`}
	srv := testGateway(t, rec)
	post := func(path, body string) (int, string) {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if s, b := post("/_local/schedule/FireFunction", `{"time":"2026-11-30T09:30:00Z"}`); s != 200 || b != `{"due":0}` {
		t.Errorf("%d %s", s, b)
	}
	var ev events.EventBridgeEvent
	_ = json.Unmarshal(rec.raw[0], &ev)
	if ev.Source != "aws.events" || ev.DetailType != "Scheduled Event" || !ev.Time.Equal(time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC)) || rec.fn[0] != "FireFunction" {
		t.Errorf("event %+v", ev)
	}
	if s, _ := post("/_local/schedule/FireFunction", ""); s != 200 {
		t.Errorf("no body: %d", s)
	}
	_ = json.Unmarshal(rec.raw[1], &ev)
	if !ev.Time.Equal(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("default time %v", ev.Time)
	}
	for body, want := range map[string]int{`{"time":"yesterday"}`: 400, `[`: 400} {
		if s, _ := post("/_local/schedule/FireFunction", body); s != want {
			t.Errorf("%s: %d", body, s)
		}
	}
	if s, b := post("/_local/schedule/FireFunction", `{"time":"2026-11-30T10:05:00Z"}`); s != 200 || b != `{"due":0}` {
		t.Errorf("5 minutes ahead: %d %s", s, b)
	}
	invoked := len(rec.fn)
	s, b := post("/_local/schedule/FireFunction", `{"time":"2026-11-30T10:05:01Z"}`)
	var p struct{ Code, Detail string }
	_ = json.Unmarshal([]byte(b), &p)
	if s != 400 || p.Code != "invalid_request" || !strings.Contains(p.Detail, "more than 5 minutes ahead") || !strings.Contains(p.Detail, "nextRunAt") || len(rec.fn) != invoked {
		t.Errorf("more than 5 minutes ahead: %d %s, %d invocations", s, b, len(rec.fn)-invoked)
	}
	if s, _ := post("/_local/schedule/SessionStartFunction", ""); s != 404 {
		t.Errorf("unscheduled function: %d", s)
	}
	rec.err = errors.New("boom")
	if s, _ := post("/_local/schedule/FireFunction", ""); s != 502 {
		t.Errorf("failing function: %d", s)
	}
}

// TestGatewayFailureLogged: when a function fails, the 502 names the
// request id the event carried, and the log tells the cause under it; the
// answer never does.
func TestGatewayFailureLogged(t *testing.T) {
	rec := &recorder{err: errors.New("emulator exited: signal killed")}
	var logs bytes.Buffer
	routes := templateRoutes(t)
	srv := httptest.NewServer(&Gateway{Routes: routes, Invoke: rec.invoke, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/v1/allocations", nil)
	req.Header.Set("Authorization", "Bearer "+DevToken(map[string]any{"sub": "u1"}))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Code, Detail, RequestID string }
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 502 || body.Code != "internal_error" || strings.Contains(body.Detail, "signal") ||
		body.RequestID == "" || rec.events[0].RequestContext.RequestID != body.RequestID {
		t.Errorf("%d %+v (event id %s)", resp.StatusCode, body, rec.events[0].RequestContext.RequestID)
	}
	if !strings.Contains(logs.String(), `"requestId":"`+body.RequestID+`"`) || !strings.Contains(logs.String(), "signal killed") {
		t.Errorf("log %s", logs.String())
	}
}

// TestMatchPath: a {name} segment takes one segment, unescaped; a last
// {name+} segment takes the one or more left, as sent; a route without a
// greedy segment is chosen over one with, whatever their literals.
func TestMatchPath(t *testing.T) {
	for _, r := range []struct {
		pattern, path string
		params        map[string]string
		ok            bool
	}{
		{"/v1/hooks/{triggerId}", "/v1/hooks/trg_a", map[string]string{"triggerId": "trg_a"}, true},
		{"/v1/hooks/{triggerId}", "/v1/hooks/trg_a/b", nil, false},
		{"/v1/hooks/{proxy+}", "/v1/hooks/trg_a", map[string]string{"proxy": "trg_a"}, true},
		{"/v1/hooks/{proxy+}", "/v1/hooks/trg_a/b%2Fc/d", map[string]string{"proxy": "trg_a/b%2Fc/d"}, true},
		{"/v1/hooks/{proxy+}", "/v1/hooks", nil, false},
		{"/v1/hooks/{proxy+}", "/v1/hooks/", nil, false},
		{"/v1/hooks/{proxy+}", "/v1/hooks/a//b", nil, false},
		{"/v1/hooks/{proxy+}", "/v1/other/a", nil, false},
	} {
		params, _, ok := matchPath(r.pattern, r.path)
		if ok != r.ok || ok && !maps.Equal(params, r.params) {
			t.Errorf("%s on %s: %v %v", r.pattern, r.path, params, ok)
		}
	}
	g := &Gateway{Routes: []template.Route{
		{Function: "Greedy", Method: "POST", Path: "/v1/hooks/{proxy+}"},
		{Function: "One", Method: "ANY", Path: "/v1/hooks/{triggerId}"},
	}}
	if rt, _, _ := g.match("POST", "/v1/hooks/trg_a"); rt.Function != "One" {
		t.Errorf("chose %s over the route without a greedy segment", rt.Function)
	}
	if rt, _, _ := g.match("POST", "/v1/hooks/trg_a/b"); rt.Function != "Greedy" {
		t.Errorf("chose %s for a deeper path", rt.Function)
	}
}
