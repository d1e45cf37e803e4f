package triggerapi_test

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
)

// detailOf is a problem answer's detail.
func detailOf(r apitest.Result) string { d, _ := r.Body["detail"].(string); return d }

// TestWebhookHeaderReserved: a token trigger's own header may not be one
// the hook reads for something else (a proof of any mode, the event, a
// delivery id) or one the gateway or a proxy owns, in any case: 400
// invalid_request naming the header as sent, nothing written. Other
// headers are kept.
func TestWebhookHeaderReserved(t *testing.T) {
	h := newHarness(t)
	token := func(header string) string {
		return hookBody(hook(map[string]any{"verify": "token", "header": header}))
	}
	for _, name := range []string{
		"Authorization", "Proxy-Authorization", "Cookie", "Host",
		"Content-Type", "Content-Length", "content-encoding", "Content-Signature",
		"X-Hub-Signature-256", "X-Hub-Signature", "X-Gitlab-Token", "x-gitlab-token",
		"webhook-id", "Webhook-Signature", "webhook-timestamp", "Webhook-Secret",
		"svix-id", "svix-signature", "Svix-Timestamp", "svix-anything",
		"X-GitHub-Event", "x-github-event", "X-Gitlab-Event", "X-GITLAB-EVENT",
		"X-GitHub-Delivery", "X-Gitlab-Event-UUID", "Idempotency-Key",
		"Connection", "Keep-Alive", "Transfer-Encoding", "TE", "te", "Trailer", "Upgrade",
		"Forwarded", "X-Forwarded-For", "x-forwarded-proto", "X-Forwarded-Host",
		"X-Amzn-Trace-Id", "x-amzn-trace-id", "X-Amzn-Anything",
	} {
		t.Run(name, func(t *testing.T) {
			before, calls := len(h.Items()), h.KMS.Calls.Load()
			r := create(h, user, token(name))
			if r.Status != 400 || r.Code() != "invalid_request" || !strings.Contains(detailOf(r), "webhook.header may not be "+name+":") {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
			if n := len(h.Items()); n != before || h.KMS.Calls.Load() != calls {
				t.Errorf("a refused trigger wrote %d items, made %d KMS calls", n-before, h.KMS.Calls.Load()-calls)
			}
		})
	}
	for _, name := range []string{
		"X-Webhook-Secret", "X-Custom-Token", "X-Token", "Webhook", "X-Gitlab-Events", "X-Forwarded",
		"X-Amzn", "Content", "Tokens", "X-Hub-Signature-512", "Hosts", "Authorization-Token",
	} {
		t.Run(name, func(t *testing.T) {
			r := create(h, user, token(name))
			if r.Status != 201 || webhookOf(t, r)["header"] != name {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
		})
	}
	t.Run("a patch cannot name one", func(t *testing.T) {
		id := newHook(t, h, hook(map[string]any{"verify": "token", "header": "X-Webhook-Secret"}))
		before := h.Snapshot()
		for _, header := range []string{"X-Gitlab-Event", "X-Other"} {
			r := patchCall(h, user, id, `{"webhook":{"header":"`+header+`"}}`)
			if r.Status != 400 || r.Code() != "invalid_request" {
				t.Errorf("%s: %d %s", header, r.Status, r.Raw)
			}
		}
		if after := h.Snapshot(); after != before {
			t.Errorf("the table changed:\n%s\n%s", before, after)
		}
	})
}

// TestWebhookEventNames: an event a trigger lists is 1 to 100 of
// [A-Za-z0-9_.-] with single inner spaces, so that GitLab's event names
// can be listed (Push Hook, Merge Request Hook, and with an action, Merge
// Request Hook.merge), on create and on a patch of webhook.events; a
// space first or last, two in a row, or any other white space is 400.
func TestWebhookEventNames(t *testing.T) {
	h := newHarness(t)
	id := newHook(t, h, hook(map[string]any{"verify": "token", "events": []string{"push"}}))
	long := strings.Repeat("a b ", 24) + "abcd" // 100
	for _, events := range [][]string{
		{"Push Hook"},
		{"Push Hook", "Merge Request Hook", "Note Hook", "Tag Push Hook"},
		{"Merge Request Hook.merge", "pull_request.opened", "a.b c_d-e"},
		{long},
	} {
		t.Run(strings.Join(events, ","), func(t *testing.T) {
			want := `["` + strings.Join(events, `","`) + `"]`
			r := create(h, user, hookBody(hook(map[string]any{"verify": "token", "events": events})))
			if r.Status != 201 || member(r.Body, "webhook.events") != want {
				t.Errorf("create: %d %s", r.Status, r.Raw)
			}
			p := patchCall(h, user, id, `{"webhook":{"events":`+want+`}}`)
			got := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: user})
			if p.Status != 200 || member(got.Body, "webhook.events") != want {
				t.Errorf("patch: %d %s; stored %s", p.Status, p.Raw, got.Raw)
			}
		})
	}
	before := h.Snapshot()
	for _, event := range []string{
		" Push Hook", "Push Hook ", "Push  Hook", " ", "  ", "Push\tHook", "Push\nHook", "Push\u00a0Hook",
		"Push Hook:x", long + "e", strings.Repeat(" ", 100),
	} {
		t.Run(event, func(t *testing.T) {
			calls := h.KMS.Calls.Load()
			r := create(h, user, hookBody(hook(map[string]any{"verify": "token", "events": []string{"push", event}})))
			if r.Status != 400 || r.Code() != "invalid_request" || !strings.HasPrefix(detailOf(r), "webhook.events holds an event that is not") {
				t.Errorf("create: %d %s", r.Status, r.Raw)
			}
			raw, _ := json.Marshal(event)
			p := patchCall(h, user, id, `{"webhook":{"events":["push",`+string(raw)+`]}}`)
			if p.Status != 400 || p.Code() != "invalid_request" || detailOf(p) != detailOf(r) {
				t.Errorf("patch: %d %s", p.Status, p.Raw)
			}
			if after := h.Snapshot(); after != before || h.KMS.Calls.Load() != calls {
				t.Errorf("the table changed, or KMS was called:\n%s\n%s", before, after)
			}
		})
	}
}

// TestWebhookEventsNotAnArray: events (or an entry) of another type is
// 400 invalid_request whose detail names the type expected, on create and
// on a patch.
func TestWebhookEventsNotAnArray(t *testing.T) {
	h := newHarness(t)
	id := newHook(t, h, nil)
	before := h.Snapshot()
	for _, row := range []struct{ events, detail string }{
		{`"push"`, "webhook.events must be an array of strings."},
		{`{"push":true}`, "webhook.events must be an array of strings."},
		{`true`, "webhook.events must be an array of strings."},
		{`5`, "webhook.events must be an array of strings."},
		{`["push",7]`, "webhook.events.1 must be a string."},
		{`[["push"]]`, "webhook.events.0 must be a string."},
	} {
		t.Run(row.events, func(t *testing.T) {
			r := create(h, user, hookBody(hook(map[string]any{"events": jsontext.Value(row.events)})))
			p := patchCall(h, user, id, `{"webhook":{"events":`+row.events+`}}`)
			for _, res := range []apitest.Result{r, p} {
				if res.Status != 400 || res.Code() != "invalid_request" || detailOf(res) != row.detail {
					t.Errorf("%d %s, want %q", res.Status, res.Raw, row.detail)
				}
			}
			if after := h.Snapshot(); after != before {
				t.Errorf("the table changed:\n%s\n%s", before, after)
			}
		})
	}
	// The other members of a body name their types too.
	for _, row := range []struct{ body, detail string }{
		{hookBody(map[string]any{"webhook": "github"}), "webhook must be an object."},
		{hookBody(hook(map[string]any{"verify": []string{"token"}})), "webhook.verify must be a string."},
		{body(map[string]any{"active": "yes"}), "active must be true or false."},
		{body(map[string]any{"repository": []string{"acme/app"}}), "repository must be an object."},
		{body(map[string]any{"prompt": []string{"p"}}), "prompt must be a string."},
	} {
		if r := create(h, user, row.body); r.Status != 400 || detailOf(r) != row.detail {
			t.Errorf("%d %s, want %q", r.Status, r.Raw, row.detail)
		}
	}
}
