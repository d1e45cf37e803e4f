package httpapi

import (
	"context"
	"encoding/json/v2"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cloud-agent/control-plane/infra/local/emftest"
	"github.com/cloud-agent/control-plane/shared/invocation"
)

// logLine is the one JSON line of an invocation's log.
func logLine(t *testing.T, log string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines: %s", len(lines), log)
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatalf("line %s: %v", lines[0], err)
	}
	return line
}

// TestLogLineOfEachAnswer: the log line carries the request id and the
// status of every answer, and the code of every problem, whichever check
// answered it (the router's 404 and 405 included); an answer that is no
// problem has no code, and only a 5xx is logged at level ERROR.
func TestLogLineOfEachAnswer(t *testing.T) {
	user := map[string]string{"sub": "u1"}
	rows := []struct {
		rule   string
		ev     events.APIGatewayV2HTTPRequest
		status int
		code   string
	}{
		{"an unknown route", event("GET", "/v1/nothing", nil, ""), 404, "not_found"},
		{"a known path with another method", event("PUT", "/v1/things/a", user, ""), 405, "method_not_allowed"},
		{"no caller", event("GET", "/v1/things/a", nil, ""), 401, "unauthorized"},
		{"a body too large", event("POST", "/v1/things", user, strings.Repeat("x", MaxBody+1)), 413, "payload_too_large"},
		{"a handler's problem", event("GET", "/v1/fail/busy", user, ""), 409, "creation_in_progress"},
		{"a handler's unexpected error", event("GET", "/v1/fail/other", user, ""), 500, "internal_error"},
		{"an answer", event("GET", "/v1/things/a", user, ""), 200, ""},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			res := serve(t, testAPI, r.ev)
			line := logLine(t, res.log)
			if res.status != r.status || line["status"] != float64(r.status) || line["requestId"] != "req-1" {
				t.Errorf("answered %d, line %v", res.status, line)
			}
			code, logged := line["code"]
			if r.code != "" && (code != r.code || res.body["code"] != r.code) || r.code == "" && logged {
				t.Errorf("line %v, want code %q", line, r.code)
			}
			if level := map[bool]string{true: "ERROR", false: "INFO"}[r.status >= 500]; line["level"] != level {
				t.Errorf("level %v, want %s", line["level"], level)
			}
		})
	}
}

// TestUnmarshallableBody: a handler's body that does not marshal is
// answered 500 internal_error with the request id, and the line says so
// (status, code, request id, the body's type) without the body's values.
func TestUnmarshallableBody(t *testing.T) {
	broken := func(log *slog.Logger) *API {
		return New(log, Route{Method: "GET", Pattern: "/v1/broken", Handle: func(context.Context, *Request) (Response, error) {
			return Response{Status: 200, Body: map[string]any{"prompt": "secret words", "ratio": math.Inf(1)}}, nil
		}})
	}
	res := serve(t, broken, event("GET", "/v1/broken", map[string]string{"sub": "u1"}, ""))
	if res.status != 500 || res.body["code"] != "internal_error" || res.body["requestId"] != "req-1" ||
		res.headers["Content-Type"] != "application/problem+json" {
		t.Errorf("answered %d %v %v", res.status, res.headers, res.body)
	}
	line := logLine(t, res.log)
	if line["status"] != float64(500) || line["code"] != "internal_error" || line["requestId"] != "req-1" || line["level"] != "ERROR" {
		t.Errorf("line %v", line)
	}
	if e, _ := line["error"].(string); !strings.Contains(e, "map[string]interface {}") {
		t.Errorf("the line does not name the body's type: %v", line)
	}
	if strings.Contains(res.log, "secret") || strings.Contains(res.log, "Inf") {
		t.Errorf("the body's values are logged: %s", res.log)
	}
}

// TestLogLineMetrics: every answer's line carries valid EMF with the
// Function dimension, ColdStart (1 on the environment's first invocation
// only) and DynamoDBRequests; a 4xx problem adds Refusals 1 and a 5xx
// Faults 1, each by [Function] and by [Function, Code] with the problem's
// code, whichever check answered it, and Faults by [Function, Version]
// with the environment's version too; an answer that is no problem adds
// neither. The line's own members stay as they are.
func TestLogLineMetrics(t *testing.T) {
	user := map[string]string{"sub": "u1"}
	metrics := invocation.NewMetrics("TestFunction", "7")
	api := func(log *slog.Logger) *API { return testAPI(log).WithMetrics(metrics) }
	sets := map[string][]string{
		Refusals: {"Function", "Function,Code"},
		Faults:   {"Function", "Function,Code", "Function,Version"},
	}
	rows := []struct {
		rule   string
		ev     events.APIGatewayV2HTTPRequest
		metric string // Refusals, Faults or none
		code   string
	}{
		{"an answer", event("GET", "/v1/things/a", user, ""), "", ""},
		{"an unknown route", event("GET", "/v1/nothing", nil, ""), Refusals, "not_found"},
		{"a known path with another method", event("PUT", "/v1/things/a", user, ""), Refusals, "method_not_allowed"},
		{"no caller", event("GET", "/v1/things/a", nil, ""), Refusals, "unauthorized"},
		{"a body too large", event("POST", "/v1/things", user, strings.Repeat("x", MaxBody+1)), Refusals, "payload_too_large"},
		{"a handler's problem", event("GET", "/v1/fail/busy", user, ""), Refusals, "creation_in_progress"},
		{"a handler's unexpected error", event("GET", "/v1/fail/other", user, ""), Faults, "internal_error"},
		{"a handler's unavailable storage", event("GET", "/v1/fail/down", user, ""), Faults, "service_unavailable"},
		{"a warning", event("GET", "/v1/things/warn", user, ""), "", ""},
	}
	for i, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			res := serve(t, api, r.ev)
			raw := strings.TrimSpace(res.log)
			line := emftest.Check(t, raw)
			if line.Members["Function"] != "TestFunction" || line.Members["status"] != float64(res.status) || line.Members["requestId"] != "req-1" {
				t.Errorf("%s", raw)
			}
			if v, ok := line.Value("ColdStart"); !ok || v != map[bool]float64{true: 1, false: 0}[i == 0] {
				t.Errorf("ColdStart %v %v on invocation %d", v, ok, i+1)
			}
			if v, ok := line.Value("DynamoDBRequests"); !ok || v != 0 || !slices.Equal(line.Sets("DynamoDBRequests"), []string{"Function"}) {
				t.Errorf("DynamoDBRequests %v %v by %v", v, ok, line.Sets("DynamoDBRequests"))
			}
			for _, m := range []string{Refusals, Faults} {
				v, ok := line.Value(m)
				switch {
				case m != r.metric && ok:
					t.Errorf("%s on the line: %s", m, raw)
				case m == r.metric && (v != 1 || line.Members["Code"] != r.code || line.Members["code"] != r.code ||
					!slices.Equal(line.Sets(m), sets[m])):
					t.Errorf("%s %v by %v, want by %v: %s", m, v, line.Sets(m), sets[m], raw)
				}
			}
			if version, ok := line.Members["Version"]; ok != (r.metric == Faults) || ok && version != "7" {
				t.Errorf("Version %v on the line: %s", version, raw)
			}
			want := []string{"ColdStart", "DynamoDBRequests"}
			if r.metric != "" {
				want = append(want, r.metric)
			}
			if !slices.Equal(line.Metrics(), want) {
				t.Errorf("metrics %v, want %v", line.Metrics(), want)
			}
		})
	}
}

// TestNoIdentifierIsADimension: no user, org, bot, session or trigger id
// (the caller's claims, the path's ids) is a dimension value: dimensions
// are the function, its version, a problem's code, and a sandbox's
// provider and allocation only.
func TestNoIdentifierIsADimension(t *testing.T) {
	claims := map[string]string{"sub": "user-7", "org_ids": "[org-9]", "bot_id": "bot-3"}
	ids := []string{"user-7", "org-9", "bot-3", "workspace_0f8fad5b-d9cb-469f-a165-70867728950e", "trg_7c9e6679-7425-40de-944b-e07fc1f90ae7"}
	api := func(log *slog.Logger) *API {
		return testAPI(log).WithMetrics(invocation.NewMetrics("TestFunction", "1"))
	}
	for _, ev := range []events.APIGatewayV2HTTPRequest{
		event("GET", "/v1/things/"+ids[3], claims, ""),
		event("GET", "/v1/fail/"+ids[4], claims, ""),
		event("PUT", "/v1/things/"+ids[4], claims, ""),
		event("GET", "/v1/nothing/"+ids[3], claims, ""),
	} {
		line := emftest.Check(t, strings.TrimSpace(serve(t, api, ev).log))
		for name, v := range line.Dimensions() {
			if !slices.Contains([]string{"Function", "Version", "Code"}, name) {
				t.Errorf("dimension %s=%s", name, v)
			}
			for _, id := range ids {
				if strings.Contains(v, id) {
					t.Errorf("dimension %s holds the id %s", name, id)
				}
			}
		}
	}
}
