package gateway_test

import (
	"slices"
	"strings"
	"testing"
)

// TestBadInputRuntime: docs/bad-input.md's "Runtime routes" rows, through
// the gateway: each refusal is the contract's status and code, leaves the
// table as it was, and a 401 says the same whatever the reason; the near
// misses pass.
func TestBadInputRuntime(t *testing.T) {
	b := newBadInput(t)
	made := b.raw(t, "POST", "/v1/sessions", []string{bearer(biUser), "Content-Type: application/json"},
		`{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"m"}}`)
	var started struct{ SessionID string }
	if err := jsonUnmarshal(made.body, &started); err != nil || made.status != 201 {
		t.Fatalf("%d %s", made.status, made.body)
	}
	id := started.SessionID
	token, err := b.h.Tokens.Token(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	auth := "Authorization: Bearer " + token
	path := "/v1/runtime/sessions/" + id
	for _, r := range []struct {
		rule, method, target string
		headers              []string
		body                 string
		status               int
		want                 string
	}{
		{"no Authorization", "GET", path, nil, "", 401, "unauthorized"},
		{"a lowercase scheme, accepted", "GET", path, []string{"Authorization: bearer " + token}, "", 200, `"sessionId"`},
		{"Authorization sent twice", "GET", path, []string{auth, auth}, "", 401, "unauthorized"},
		{"a token one character short", "GET", path, []string{auth[:len(auth)-1]}, "", 401, "unauthorized"},
		{"a token with padding", "GET", path, []string{auth + "="}, "", 401, "unauthorized"},
		{"the path in capitals", "GET", strings.ToUpper(path[:len("/v1/runtime/sessions/")+10]) + path[len("/v1/runtime/sessions/")+10:], []string{auth}, "", 404, "not_found"},
		{"a session id of capitals", "GET", "/v1/runtime/sessions/workspace_" + strings.ToUpper(id[len("workspace_"):]), []string{auth}, "", 401, "unauthorized"},
		{"a path deeper", "GET", path + "/claim/x", []string{auth}, "", 404, "not_found"},
		{"another method", "DELETE", path, []string{auth}, "", 405, "method_not_allowed"},
		{"a binary body of 256 KiB, a third larger base64-encoded", "POST", path + "/claim", []string{"Content-Type: application/octet-stream"}, strings.Repeat(" ", 256<<10), 401, "unauthorized"},
		{"a binary body over 256 KiB", "POST", path + "/claim", []string{"Content-Type: application/octet-stream"}, strings.Repeat(" ", 256<<10+1), 413, "payload_too_large"},
		{"a claim without a runner", "POST", path + "/claim", []string{auth}, `{}`, 400, "runner is required."},
		{"a runner of 129", "POST", path + "/claim", []string{auth}, `{"runner":"` + strings.Repeat("r", 129) + `"}`, 400, "runner must be 1 to 128"},
		{"a runner with a space", "POST", path + "/claim", []string{auth}, `{"runner":"a b"}`, 400, "runner must be 1 to 128"},
		{"a runner null", "POST", path + "/claim", []string{auth}, `{"runner":null}`, 400, "runner"},
		{"a claim's unknown member", "POST", path + "/claim", []string{auth}, `{"runner":"r","lease":60}`, 400, "lease is not a known member."},
		{"a claim that is not JSON", "POST", path + "/claim", []string{auth}, `runner=r`, 400, "invalid_request"},
		{"an unknown status", "POST", path + "/outcome", []string{auth}, `{"status":"succeeded"}`, 400, "status must be completed, failed or interrupted."},
		{"timed_out reported", "POST", path + "/outcome", []string{auth}, `{"status":"timed_out"}`, 400, "status must be completed, failed or interrupted."},
		{"an error on a completed run", "POST", path + "/outcome", []string{auth}, `{"status":"completed","error":{"code":"x","message":"m"}}`, 400, "error is only for a run that did not complete."},
		{"an error code in capitals", "POST", path + "/outcome", []string{auth}, `{"status":"failed","error":{"code":"Tests","message":"m"}}`, 400, "error.code must be 1 to 100"},
		{"an error without its message", "POST", path + "/outcome", []string{auth}, `{"status":"failed","error":{"code":"x"}}`, 400, "error.message is required."},
		{"a message of 4,097", "POST", path + "/outcome", []string{auth}, `{"status":"failed","error":{"code":"x","message":"` + strings.Repeat("é", 4097) + `"}}`, 400, "error.message must be at most 4096 characters."},
		{"an end 61 seconds ahead", "POST", path + "/outcome", []string{auth}, `{"status":"failed","endedAt":"2999-01-01T00:00:00Z"}`, 400, "endedAt may be at most 60 seconds after now."},
		{"an end before the start", "POST", path + "/outcome", []string{auth}, `{"status":"failed","endedAt":"2000-01-01T00:00:00Z"}`, 400, "endedAt may not be before the session's start."},
		{"an end not RFC 3339", "POST", path + "/outcome", []string{auth}, `{"status":"failed","endedAt":"yesterday"}`, 400, "endedAt must be an RFC 3339 time."},
		{"a report's unknown member", "POST", path + "/outcome", []string{auth}, `{"status":"failed","exitCode":1}`, 400, "exitCode is not a known member."},
	} {
		t.Run(r.rule, func(t *testing.T) {
			before := b.items(t)
			headers := r.headers
			if !slices.ContainsFunc(headers, func(h string) bool { return strings.HasPrefix(h, "Content-Type:") }) {
				headers = append(headers, "Content-Type: application/json")
			}
			a := b.raw(t, r.method, r.target, headers, r.body)
			if a.status != r.status || !strings.Contains(a.body, r.want) {
				t.Errorf("%d %s, want %d %s", a.status, a.body, r.status, r.want)
			}
			if r.status == 401 && !strings.Contains(a.body, `"detail":"The session token is not valid for this session."`) {
				t.Errorf("a 401 of its own: %s", a.body)
			}
			if !slices.Equal(before, b.items(t)) {
				t.Error("the table changed")
			}
		})
	}
}
