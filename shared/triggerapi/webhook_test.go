package triggerapi_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
)

// hookBody is a valid webhook trigger body with members set (nil deletes
// one).
func hookBody(set map[string]any) string {
	base := map[string]any{
		"webhook":    map[string]any{},
		"repository": baseBody["repository"],
		"agent":      baseBody["agent"],
		"prompt":     "Review {{ body.pull_request.title }}.",
	}
	return apitest.Body(base, set)
}

// hook is a webhook member of a body.
func hook(members map[string]any) map[string]any { return map[string]any{"webhook": members} }

// imported is a secret a standard trigger may import: whsec_ and 32 bytes.
var imported = "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

// webhookOf is the webhook member of an answer's trigger.
func webhookOf(t *testing.T, r apitest.Result) map[string]any {
	t.Helper()
	w, ok := r.Body["webhook"].(map[string]any)
	if !ok {
		t.Fatalf("no webhook member: %d %s", r.Status, r.Raw)
	}
	return w
}

// TestCreateWebhook: a webhook trigger is 201 with its URL, verify
// (github by default), events (null: every event), its generated secret
// (derived as version 1: whsec_ and 44 characters of base64) in this
// answer only, and schedule
// and nextRunAt null; GET and the list never show the secret.
func TestCreateWebhook(t *testing.T) {
	h := newHarness(t)
	r := create(h, user, hookBody(nil))
	if r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	id := r.Body["triggerId"].(string)
	want, err := h.Secrets.Derive(t.Context(), id, 1)
	if err != nil {
		t.Fatal(err)
	}
	w := webhookOf(t, r)
	if b64, ok := strings.CutPrefix(want, "whsec_"); w["secret"] != want || !ok || len(b64) != 44 {
		t.Errorf("secret %v, want the derived %s", w["secret"], want)
	}
	wantView := fmt.Sprint(map[string]any{
		"url": "/v1/hooks/" + id, "verify": "github", "events": nil, "secret": want,
		"secretCreatedAt": "2026-11-30T10:00:30Z", "previousSecretValidUntil": nil,
	})
	if fmt.Sprint(w) != wantView || r.Body["schedule"] != nil || r.Body["nextRunAt"] != nil {
		t.Errorf("%s", r.Raw)
	}
	got := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: user})
	list := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers", Claims: user})
	for _, raw := range []string{got.Raw, list.Raw, strings.Join(h.Items(), "\n"), strings.Join(h.Logs(), "\n")} {
		if strings.Contains(raw, want) {
			t.Errorf("the secret is shown or stored: %s", raw)
		}
	}
	if _, shown := webhookOf(t, got)["secret"]; shown || got.Status != 200 {
		t.Errorf("GET: %d %s", got.Status, got.Raw)
	}
	for _, row := range []struct {
		rule string
		set  map[string]any
		want string
	}{
		{"events are kept", hook(map[string]any{"events": []string{"push", "pull_request.opened"}}), "[push pull_request.opened]"},
		{"null events are every event", hook(map[string]any{"events": nil, "verify": "token"}), "<nil>"},
		{"a token trigger shows its own header", hook(map[string]any{"verify": "token", "header": "X-Webhook-Secret"}), "X-Webhook-Secret"},
		{"a standard trigger", hook(map[string]any{"verify": "standard"}), "standard"},
	} {
		t.Run(row.rule, func(t *testing.T) {
			r := create(h, user, hookBody(row.set))
			if r.Status != 201 {
				t.Fatalf("%d %s", r.Status, r.Raw)
			}
			w := webhookOf(t, r)
			v := fmt.Sprint(w["events"])
			switch {
			case strings.Contains(row.rule, "header"):
				v = fmt.Sprint(w["header"])
			case strings.Contains(row.rule, "standard"):
				v = fmt.Sprint(w["verify"])
			}
			if v != row.want {
				t.Errorf("%s, want %s", r.Raw, row.want)
			}
		})
	}
}

// TestCreateWebhookImported: an imported secret (standard only) is
// sealed in the table, never in clear, and never shown back.
func TestCreateWebhookImported(t *testing.T) {
	h := newHarness(t)
	r := create(h, user, hookBody(hook(map[string]any{"verify": "standard", "secret": imported})))
	if r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	if _, shown := webhookOf(t, r)["secret"]; shown || strings.Contains(r.Raw, imported) {
		t.Errorf("the imported secret is shown back: %s", r.Raw)
	}
	items := strings.Join(h.Items(), "\n")
	key := strings.TrimPrefix(imported, "whsec_")
	if strings.Contains(items, key) || strings.Contains(items, base64.StdEncoding.EncodeToString([]byte(imported))) || !strings.Contains(items, `"sealed"`) {
		t.Errorf("the table holds the imported secret in clear, or not sealed: %s", items)
	}
}

// TestCreateWebhookRefused: each rule of a webhook body is 400, 403 comes
// after them, and KMS unreachable is 503; none writes anything.
func TestCreateWebhookRefused(t *testing.T) {
	h := newHarness(t)
	events := func(e any) map[string]any { return hook(map[string]any{"events": e}) }
	token := func(header string) map[string]any { return hook(map[string]any{"verify": "token", "header": header}) }
	many := make([]string, 51)
	for i := range many {
		many[i] = fmt.Sprint("e", i)
	}
	for _, row := range []struct {
		rule   string
		claims map[string]string
		body   string
		status int
	}{
		{"both schedule and webhook", user, hookBody(map[string]any{"schedule": baseBody["schedule"]}), 400},
		{"neither schedule nor webhook", user, hookBody(map[string]any{"webhook": nil}), 400},
		{"an unknown webhook member", user, hookBody(hook(map[string]any{"url": "/x"})), 400},
		{"an unknown verify", user, hookBody(hook(map[string]any{"verify": "gitlab"})), 400},
		{"an empty verify", user, hookBody(hook(map[string]any{"verify": ""})), 400},
		{"verify in another case", user, hookBody(hook(map[string]any{"verify": "GitHub"})), 400},
		{"webhook is an object", user, hookBody(map[string]any{"webhook": "github"}), 400},
		{"events may not be empty", user, hookBody(events([]string{})), 400},
		{"events of 51", user, hookBody(events(many)), 400},
		{"an empty event", user, hookBody(events([]string{""})), 400},
		{"an event of 101", user, hookBody(events([]string{strings.Repeat("e", 101)})), 400},
		{"an event with two spaces in a row", user, hookBody(events([]string{"pull  request"})), 400},
		{"an event with a colon", user, hookBody(events([]string{"push:x"})), 400},
		{"an event twice", user, hookBody(events([]string{"push", "push"})), 400},
		{"events of another type", user, hookBody(events("push")), 400},
		{"a null event", user, hookBody(events([]any{nil})), 400},
		{"a secret for github", user, hookBody(hook(map[string]any{"secret": imported})), 400},
		{"a secret for token", user, hookBody(hook(map[string]any{"verify": "token", "secret": imported})), 400},
		{"a secret without whsec_", user, hookBody(hook(map[string]any{"verify": "standard", "secret": strings.TrimPrefix(imported, "whsec_")})), 400},
		{"a secret of 23 bytes", user, hookBody(hook(map[string]any{"verify": "standard", "secret": "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 23))})), 400},
		{"a secret of 65 bytes", user, hookBody(hook(map[string]any{"verify": "standard", "secret": "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65))})), 400},
		{"an empty secret", user, hookBody(hook(map[string]any{"verify": "standard", "secret": ""})), 400},
		{"a header for github", user, hookBody(hook(map[string]any{"header": "X-Secret"})), 400},
		{"a header for standard", user, hookBody(hook(map[string]any{"verify": "standard", "header": "X-Secret"})), 400},
		{"an empty header", user, hookBody(token("")), 400},
		{"a header of 101", user, hookBody(token(strings.Repeat("h", 101))), 400},
		{"a header with an underscore", user, hookBody(token("X_Secret")), 400},
		{"the Authorization header", user, hookBody(token("authorization")), 400},
		{"the Cookie header", user, hookBody(token("COOKIE")), 400},
		{"the Host header", user, hookBody(token("Host")), 400},
		{"a Content- header", user, hookBody(token("Content-Signature")), 400},
		{"github's proof header", user, hookBody(token("X-Hub-Signature-256")), 400},
		{"github's SHA-1 proof header", user, hookBody(token("x-hub-signature")), 400},
		{"a standard proof header", user, hookBody(token("Webhook-Signature")), 400},
		{"a svix proof header", user, hookBody(token("svix-id")), 400},
		{"an unclosed placeholder", user, hookBody(map[string]any{"prompt": "Review {{ body"}), 400},
		{"an unknown placeholder name", user, hookBody(map[string]any{"prompt": "Review {{ secret }}"}), 400},
		{"400 before 403", user, hookBody(map[string]any{"orgId": "o9", "prompt": "{{"}), 400},
		{"an org the caller is not in", user, hookBody(map[string]any{"orgId": "o9"}), 403},
		{"403 before check 1", user, hookBody(map[string]any{"orgId": "o9", "sandboxAllocation": "nope"}), 403},
		{"check 1 before the secret", user, hookBody(map[string]any{"sandboxAllocation": "nope"}), 400},
	} {
		t.Run(row.rule, func(t *testing.T) {
			before, calls := len(h.Items()), h.KMS.Calls.Load()
			r := create(h, row.claims, row.body)
			if r.Status != row.status {
				t.Errorf("%d %s, want %d", r.Status, r.Raw, row.status)
			}
			if n := len(h.Items()); n != before || h.KMS.Calls.Load() != calls {
				t.Errorf("a refused trigger wrote %d items, made %d KMS calls", n-before, h.KMS.Calls.Load()-calls)
			}
		})
	}
	t.Run("KMS unreachable", func(t *testing.T) {
		before := len(h.Items())
		h.KMS.Close()
		for _, b := range []string{hookBody(nil), hookBody(hook(map[string]any{"verify": "standard", "secret": imported}))} {
			if r := create(h, user, b); r.Status != 503 || r.Code() != "service_unavailable" {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
		}
		if n := len(h.Items()); n != before {
			t.Errorf("wrote %d items", n-before)
		}
		if r := create(h, user, body(nil)); r.Status != 201 {
			t.Errorf("a scheduled trigger needs no KMS: %d %s", r.Status, r.Raw)
		}
	})
}
