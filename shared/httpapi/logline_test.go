package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
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
		{"a body too large", event("POST", "/v1/things", user, strings.Repeat("x", maxBody+1)), 413, "payload_too_large"},
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
		return New(log, Route{"GET", "/v1/broken", func(context.Context, *Request) (Response, error) {
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
