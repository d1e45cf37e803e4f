package start_test

import (
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
)

// TestRequestValidation: every limit of the contract's table, the secrets
// rule and the strict JSON rules, each as 400 invalid_request that writes
// nothing, beside the value just inside the limit.
func TestRequestValidation(t *testing.T) {
	h := apitest.New(t, nil)
	repo := func(m map[string]any) string { return body(map[string]any{"repository": m}) }
	agent := func(m map[string]any) string { return body(map[string]any{"agent": m}) }
	gh := func(r string) string { return repo(map[string]any{"type": "github", "repo": r}) }
	gl := func(u string) string { return repo(map[string]any{"type": "gitlab", "url": u}) }
	branch := func(b string) string { return repo(map[string]any{"type": "github", "repo": "a/b", "branch": b}) }
	ok, bad := 201, 400
	rows := []struct {
		rule   string
		body   string
		header string
		status int
	}{
		{"operationKey of 128", body(map[string]any{"operationKey": strings.Repeat("k", 128)}), "", ok},
		{"operationKey of 129", body(map[string]any{"operationKey": strings.Repeat("k", 129)}), "", bad},
		{"operationKey alphabet", body(map[string]any{"operationKey": "a_b.c:d-1"}), "", ok},
		{"operationKey with a slash", body(map[string]any{"operationKey": "a/b"}), "", bad},
		{"operationKey empty", body(map[string]any{"operationKey": ""}), "", bad},
		{"operationKey trigger: is reserved", body(map[string]any{"operationKey": "trigger:x"}), "", bad},
		{"Idempotency-Key trigger: is reserved", body(nil), "trigger:x", bad},
		{"Idempotency-Key differs from operationKey", body(map[string]any{"operationKey": "a"}), "b", bad},
		{"Idempotency-Key equal to operationKey", body(map[string]any{"operationKey": "same-key"}), "same-key", ok},
		{"github repo", gh("Owner-1/name.x_y"), "", ok},
		{"github owner of 40", gh(strings.Repeat("o", 40) + "/n"), "", bad},
		{"github name of 101", gh("o/" + strings.Repeat("n", 101)), "", bad},
		{"github without repo", repo(map[string]any{"type": "github"}), "", bad},
		{"github with url", repo(map[string]any{"type": "github", "repo": "a/b", "url": "https://x.y/z"}), "", bad},
		{"gitlab url", gl("https://gitlab.com/a/b.git"), "", ok},
		{"git url", repo(map[string]any{"type": "git", "url": "https://git.example.com/r"}), "", ok},
		{"url not https", gl("http://gitlab.com/a/b"), "", bad},
		{"url with user info", gl("https://user:pw@gitlab.com/a/b"), "", bad},
		{"url with a query", gl("https://gitlab.com/a/b?x=1"), "", bad},
		{"url with a fragment", gl("https://gitlab.com/a/b#x"), "", bad},
		{"url of 2048", gl("https://gitlab.com/" + strings.Repeat("a", 2048-len("https://gitlab.com/"))), "", ok},
		{"url of 2049", gl("https://gitlab.com/" + strings.Repeat("a", 2049-len("https://gitlab.com/"))), "", bad},
		{"gitlab with repo", repo(map[string]any{"type": "gitlab", "url": "https://gitlab.com/a", "repo": "a/b"}), "", bad},
		{"unknown repository type", repo(map[string]any{"type": "svn", "url": "https://x.y"}), "", bad},
		{"branch", branch("feature/x-1"), "", ok},
		{"branch of 255", branch(strings.Repeat("b", 255)), "", ok},
		{"branch of 256", branch(strings.Repeat("b", 256)), "", bad},
		{"branch with ..", branch("a..b"), "", bad},
		{"branch with a space", branch("a b"), "", bad},
		{"branch ending .lock", branch("a.lock"), "", bad},
		{"branch starting -", branch("-a"), "", bad},
		{"branch with @{", branch("a@{1}"), "", bad},
		{"branch empty", branch(""), "", bad},
		{"branch HEAD", branch("HEAD"), "", bad},
		{"mode of 50", agent(map[string]any{"mode": strings.Repeat("m", 50), "model": "x"}), "", ok},
		{"mode of 51", agent(map[string]any{"mode": strings.Repeat("m", 51), "model": "x"}), "", bad},
		{"model of 200 code points", agent(map[string]any{"mode": "m", "model": strings.Repeat("é", 200)}), "", ok},
		{"model of 201", agent(map[string]any{"mode": "m", "model": strings.Repeat("x", 201)}), "", bad},
		{"variant of 50", agent(map[string]any{"mode": "m", "model": "x", "variant": strings.Repeat("v", 50)}), "", ok},
		{"variant of 51", agent(map[string]any{"mode": "m", "model": "x", "variant": strings.Repeat("v", 51)}), "", bad},
		{"variant empty", agent(map[string]any{"mode": "m", "model": "x", "variant": ""}), "", bad},
		{"model with NUL", agent(map[string]any{"mode": "m", "model": "a\x00b"}), "", bad},
		{"mode with a line break", agent(map[string]any{"mode": "m\n", "model": "x"}), "", bad},
		{"variant with DEL", agent(map[string]any{"mode": "m", "model": "x", "variant": "v\x7f"}), "", bad},
		{"model with a C1 control", agent(map[string]any{"mode": "m", "model": "a\u0085b"}), "", bad},
		{"model with non-ASCII letters and a space", agent(map[string]any{"mode": "m", "model": "Modèle 2"}), "", ok},
		{"createdOnPlatform with a tab", body(map[string]any{"createdOnPlatform": "web\tx"}), "", bad},
		{"prompt with control characters", body(map[string]any{"initialTurn": map[string]any{"prompt": "a\x00\n\tb\x7f"}}), "", ok},
		{"mode empty", agent(map[string]any{"mode": "", "model": "x"}), "", bad},
		{"no model", agent(map[string]any{"mode": "m"}), "", bad},
		{"no agent", body(map[string]any{"agent": nil}), "", bad},
		{"no repository", body(map[string]any{"repository": nil}), "", bad},
		{"prompt of 100000 code points", body(map[string]any{"initialTurn": map[string]any{"prompt": strings.Repeat("ü", 100000)}}), "", ok},
		{"prompt of 100001", body(map[string]any{"initialTurn": map[string]any{"prompt": strings.Repeat("x", 100001)}}), "", bad},
		{"createdOnPlatform of 100", body(map[string]any{"createdOnPlatform": strings.Repeat("p", 100)}), "", ok},
		{"createdOnPlatform of 101", body(map[string]any{"createdOnPlatform": strings.Repeat("p", 101)}), "", bad},
		{"createdOnPlatform scheduled is reserved", body(map[string]any{"createdOnPlatform": "scheduled"}), "", bad},
		{"createdOnPlatform trigger-now is reserved", body(map[string]any{"createdOnPlatform": "trigger-now"}), "", bad},
		{"createdOnPlatform webhook is reserved", body(map[string]any{"createdOnPlatform": "webhook"}), "", bad},
		{"orgId pattern", body(map[string]any{"orgId": "o/1"}), "", bad},
		{"secret in the repo", gh("ghp_x/name"), "", bad},
		{"secret in the model", agent(map[string]any{"mode": "m", "model": "github_pat_123"}), "", bad},
		{"secret in the url path", gl("https://gitlab.com/glpat-123"), "", bad},
		{"secret in the branch", branch("gho_1"), "", bad},
		{"secret in createdOnPlatform", body(map[string]any{"createdOnPlatform": "ghs_1"}), "", bad},
		{"secret in the operation key", body(map[string]any{"operationKey": "ghu_1"}), "", bad},
		{"secret in an allocation name, before check 1", body(map[string]any{"runtime": map[string]any{"sandboxAllocation": "ghp_x"}}), "", bad},
		{"secret in an allocation object", body(map[string]any{"runtime": map[string]any{"sandboxAllocation": map[string]any{
			"provider": map[string]any{"id": "vercel", "account": "glpat-x"}, "instanceType": "small"}}}), "", bad},
		{"secret in the sandbox kind", body(map[string]any{"runtime": map[string]any{"sandboxKind": "ghp_x"}}), "", bad},
		{"secret markers are case-sensitive", body(map[string]any{"createdOnPlatform": "GHP_1"}), "", ok},
		{"a secret in the prompt is allowed", body(map[string]any{"initialTurn": map[string]any{"prompt": "use ghp_abc"}}), "", ok},
		{"unknown member", body(map[string]any{"extra": 1}), "", bad},
		{"unknown nested member", body(map[string]any{"initialTurn": map[string]any{"prompt": "x", "files": []any{}}}), "", bad},
		{"case-variant member", strings.Replace(body(nil), `"agent"`, `"Agent"`, 1), "", bad},
		{"repeated member", strings.Replace(body(nil), `{"agent"`, `{"agent":{},"agent"`, 1), "", bad},
		{"wrong type", body(map[string]any{"orgId": 7}), "", bad},
		{"not an object", `["x"]`, "", bad},
		{"not JSON", `{"agent":`, "", bad},
		{"trailing data", body(nil) + ` {}`, "", bad},
		{"empty body", ``, "", bad},
		{"nested too deep", `{"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, "", bad},
		{"invalid UTF-8 in the branch", strings.Replace(branch("main"), "main", "ma\xffin", 1), "", bad},
		{"invalid UTF-8 in the prompt", strings.Replace(body(map[string]any{"initialTurn": map[string]any{"prompt": "PROMPT"}}), "PROMPT", "caf\xc3", 1), "", bad},
		{"invalid UTF-8 in a member name", strings.Replace(body(nil), `"agent"`, "\"ag\xffent\"", 1), "", bad},
		{"invalid UTF-8 in an allocation name", strings.Replace(body(map[string]any{"runtime": map[string]any{"sandboxAllocation": "NAME"}}), "NAME", "vercel-sm\xe9ll", 1), "", bad},
		{"a lone surrogate escape in the prompt", strings.Replace(body(map[string]any{"initialTurn": map[string]any{"prompt": "PROMPT"}}), "PROMPT", `\ud800`, 1), "", bad},
		{"repeated member in an allocation object", strings.Replace(body(map[string]any{"runtime": map[string]any{"sandboxAllocation": map[string]any{
			"provider": map[string]any{"id": "vercel", "account": "kilo"}, "instanceType": "small"}}}), `"instanceType"`, `"instanceType":"large","instanceType"`, 1), "", bad},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			before := len(h.Items())
			res := post(h, user, r.body, "Idempotency-Key", r.header)
			if res.Status != r.status || (r.status == bad && res.Code() != "invalid_request") {
				t.Fatalf("%d %s", res.Status, res.Raw)
			}
			if r.status == bad && len(h.Items()) != before {
				t.Error("a refused request wrote to the table")
			}
		})
	}
}

// TestIdempotencyKeyDetail: a bad Idempotency-Key header is told as the
// header's fault, not the body's operationKey, and before it is compared
// with the body's key.
func TestIdempotencyKeyDetail(t *testing.T) {
	h := apitest.New(t, nil)
	for _, c := range []struct{ key, body, detail string }{
		{"a b", body(nil), "The Idempotency-Key header must be 1 to 128"},
		{"seed\ufffdkey", body(map[string]any{"operationKey": "seed-key"}), "The Idempotency-Key header must be 1 to 128"},
		{strings.Repeat("k", 129), body(nil), "The Idempotency-Key header must be 1 to 128"},
		{"trigger:x", body(nil), "The Idempotency-Key header may not start with"},
		{"", body(nil), "The Idempotency-Key header may not be empty"},
		{"b", body(map[string]any{"operationKey": "a"}), "must be equal"},
	} {
		res := h.Do(apitest.Call{Method: "POST", Path: "/v1/sessions", Claims: user, Body: c.body, Headers: map[string]string{"Idempotency-Key": c.key}})
		if d, _ := res.Body["detail"].(string); res.Code() != "invalid_request" || !strings.Contains(d, c.detail) {
			t.Errorf("Idempotency-Key %q: %d %s", c.key, res.Status, res.Raw)
		}
	}
	if len(h.Items()) != 0 {
		t.Error("a refused start wrote")
	}
}

// TestRuntimeMembersAtTheTop: runtime's members sent at the top level of
// the body, null included, are 400 invalid_request whose detail says
// where they go.
func TestRuntimeMembersAtTheTop(t *testing.T) {
	h := apitest.New(t, nil)
	for _, c := range []struct{ member, value string }{
		{"sandboxAllocation", `"vercel-small"`}, {"sandboxAllocation", "null"}, {"sandboxKind", `"code-review"`},
	} {
		b := strings.Replace(body(nil), "{", `{"`+c.member+`":`+c.value+",", 1)
		res := post(h, user, b, "Idempotency-Key", "")
		want := c.member + " is not a known member: it goes in runtime, as runtime." + c.member + "."
		if d, _ := res.Body["detail"].(string); res.Status != 400 || res.Code() != "invalid_request" || d != want {
			t.Errorf("%s: %d %s", b, res.Status, res.Raw)
		}
	}
	if len(h.Items()) != 0 {
		t.Error("a refused start wrote")
	}
}
