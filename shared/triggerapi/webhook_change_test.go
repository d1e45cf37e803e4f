package triggerapi_test

import (
	"context"
	"encoding/json/v2"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
)

// newHook creates a webhook trigger of user with the hook body and the
// members set, and returns its id.
func newHook(t *testing.T, h *apitest.Harness, set map[string]any) string {
	t.Helper()
	return h.CreateTrigger(t, user, hookBody(set))
}

// TestPatchWebhook: a patch of a webhook trigger may change its events
// (null: every event) and what a scheduled trigger's may; its template
// must parse; active never sets a next run; its mode, verify, header and
// secret are fixed.
func TestPatchWebhook(t *testing.T) {
	h := newHarness(t)
	id := newHook(t, h, hook(map[string]any{"verify": "token", "header": "X-Token", "events": []string{"push"}}))
	scheduled := newTrigger(t, h, nil)
	for _, row := range []struct {
		rule, patch string
		want        map[string]string // member path: JSON
	}{
		{"{} changes nothing", `{}`, map[string]string{"webhook.events": `["push"]`, "webhook.header": `"X-Token"`}},
		{"events replaced", `{"webhook":{"events":["push","merge_request.open"]}}`, map[string]string{"webhook.events": `["push","merge_request.open"]`}},
		{"events null: every event", `{"webhook":{"events":null}}`, map[string]string{"webhook.events": `null`, "webhook.verify": `"token"`}},
		{"pause: no next run", `{"active":false}`, map[string]string{"active": `false`, "nextRunAt": `null`, "schedule": `null`}},
		{"resume: no next run", `{"active":true}`, map[string]string{"active": `true`, "nextRunAt": `null`}},
		{"a new template", `{"prompt":"Push to {{ body.ref }}"}`, map[string]string{"prompt": `"Push to {{ body.ref }}"`}},
		{"the repository", `{"repository":{"branch":"dev"}}`, map[string]string{"repository.branch": `"dev"`, "webhook.header": `"X-Token"`}},
	} {
		t.Run(row.rule, func(t *testing.T) {
			r := patchCall(h, user, id, row.patch)
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Raw)
			}
			got := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: user})
			for path, want := range row.want {
				if member(r.Body, path) != want || member(got.Body, path) != want {
					t.Errorf("%s = %s, stored %s, want %s", path, member(r.Body, path), member(got.Body, path), want)
				}
			}
			if _, shown := webhookOf(t, r)["secret"]; shown {
				t.Errorf("a patch shows the secret: %s", r.Raw)
			}
		})
	}
	before := h.Snapshot()
	for _, row := range []struct {
		rule, id, patch string
	}{
		{"schedule on a webhook trigger", id, `{"schedule":{"cron":"0 9 * * *"}}`},
		{"null schedule on a webhook trigger", id, `{"schedule":null}`},
		{"webhook on a scheduled trigger", scheduled, `{"webhook":{"events":["push"]}}`},
		{"null webhook", id, `{"webhook":null}`},
		{"verify", id, `{"webhook":{"verify":"github"}}`},
		{"header", id, `{"webhook":{"header":"X-Other"}}`},
		{"secret", id, `{"webhook":{"secret":"` + imported + `"}}`},
		{"url", id, `{"webhook":{"url":"/v1/hooks/x"}}`},
		{"empty events", id, `{"webhook":{"events":[]}}`},
		{"an event twice", id, `{"webhook":{"events":["push","push"]}}`},
		{"a bad event", id, `{"webhook":{"events":["a:b"]}}`},
		{"events of another type", id, `{"webhook":{"events":"push"}}`},
		{"webhook of another type", id, `{"webhook":["push"]}`},
		{"a template that does not parse", id, `{"prompt":"{{ nope }}"}`},
	} {
		t.Run(row.rule, func(t *testing.T) {
			r := patchCall(h, user, row.id, row.patch)
			if r.Status != 400 || r.Code() != "invalid_request" {
				t.Errorf("%d %s", r.Status, r.Raw)
			}
			if after := h.Snapshot(); after != before {
				t.Errorf("the table changed:\n%s\n%s", before, after)
			}
		})
	}
}

// rotate is POST /v1/triggers/{id}/secret with the body b.
func rotate(h *apitest.Harness, claims map[string]string, id, b string) apitest.Result {
	return h.Do(apitest.Call{Method: "POST", Path: "/v1/triggers/" + id + "/secret", Claims: claims, Body: b})
}

// storedSecrets are the stored webhook map's secret and previous members.
func storedSecrets(t *testing.T, h *apitest.Harness, id string) (current, previous string) {
	t.Helper()
	for _, it := range h.Items() {
		var item struct {
			PK      struct{ S string }
			Webhook struct{ M map[string]any } `json:"webhook"`
		}
		if json.Unmarshal([]byte(it), &item) != nil || item.PK.S != "TRIGGER#"+id {
			continue
		}
		cur, _ := json.Marshal(item.Webhook.M["secret"], json.Deterministic(true))
		prev, _ := json.Marshal(item.Webhook.M["previous"], json.Deterministic(true))
		return string(cur), string(prev)
	}
	t.Fatalf("no trigger %s", id)
	return "", ""
}

// TestRotate: a rotation makes a new generated secret (the next version,
// shown once) or imports one (standard only, never shown back); the
// secret it replaces stays valid 24 hours, and while it is, a further
// rotation replaces only the current secret.
func TestRotate(t *testing.T) {
	h := newHarness(t)
	id := newHook(t, h, nil)
	first, _ := h.Secrets.Derive(t.Context(), id, 1)
	r := rotate(h, user, id, "")
	v2, _ := h.Secrets.Derive(t.Context(), id, 2)
	w := webhookOf(t, r)
	if r.Status != 200 || w["secret"] != v2 || v2 == first || w["previousSecretValidUntil"] != "2026-12-01T10:00:30Z" || w["secretCreatedAt"] != "2026-11-30T10:00:30Z" {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	_, prev := storedSecrets(t, h, id)
	if !strings.Contains(prev, `{"N":"1"}`) {
		t.Errorf("the previous secret is not version 1: %s", prev)
	}
	// A retried rotation within the 24 hours: the previous secret stays.
	h.Triggers.Now = func() time.Time { return clock.Add(time.Hour) }
	r = rotate(h, user, id, "{}")
	v3, _ := h.Secrets.Derive(t.Context(), id, 3)
	if w := webhookOf(t, r); r.Status != 200 || w["secret"] != v3 || w["previousSecretValidUntil"] != "2026-12-01T10:00:30Z" {
		t.Errorf("a retried rotation: %d %s", r.Status, r.Raw)
	}
	if _, p := storedSecrets(t, h, id); p != prev {
		t.Errorf("a retried rotation changed the previous secret: %s, was %s", p, prev)
	}
	// Past the 24 hours, the current secret becomes the previous one.
	h.Triggers.Now = func() time.Time { return clock.Add(25 * time.Hour) }
	r = rotate(h, user, id, "")
	v4, _ := h.Secrets.Derive(t.Context(), id, 4)
	if w := webhookOf(t, r); r.Status != 200 || w["secret"] != v4 || w["previousSecretValidUntil"] != "2026-12-02T11:00:30Z" {
		t.Errorf("a rotation past the overlap: %d %s", r.Status, r.Raw)
	}
	if _, p := storedSecrets(t, h, id); !strings.Contains(p, `{"N":"3"}`) {
		t.Errorf("the previous secret is not version 3: %s", p)
	}
	for _, raw := range []string{h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + id, Claims: user}).Raw, strings.Join(h.Items(), "\n"), strings.Join(h.Logs(), "\n")} {
		if strings.Contains(raw, v4) {
			t.Errorf("the rotated secret is shown or stored: %s", raw)
		}
	}
}

// TestRotateImport: a standard trigger imports a secret, sealed and never
// shown back; the generated one it replaces stays valid.
func TestRotateImport(t *testing.T) {
	h := newHarness(t)
	id := newHook(t, h, hook(map[string]any{"verify": "standard"}))
	r := rotate(h, user, id, `{"secret":"`+imported+`"}`)
	if w := webhookOf(t, r); r.Status != 200 || w["secret"] != nil || strings.Contains(r.Raw, imported) || w["previousSecretValidUntil"] == nil {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	cur, prev := storedSecrets(t, h, id)
	if !strings.Contains(cur, `"sealed"`) || strings.Contains(strings.Join(h.Items(), "\n"), strings.TrimPrefix(imported, "whsec_")) || !strings.Contains(prev, `{"N":"1"}`) {
		t.Errorf("stored: %s, previous %s", cur, prev)
	}
	// After an import (version 2), a generated secret takes the next version.
	h.Triggers.Now = func() time.Time { return clock.Add(25 * time.Hour) }
	r = rotate(h, user, id, "")
	v3, _ := h.Secrets.Derive(t.Context(), id, 3)
	if w := webhookOf(t, r); r.Status != 200 || w["secret"] != v3 {
		t.Errorf("a generated secret after an import: %d %s", r.Status, r.Raw)
	}
	if _, prev := storedSecrets(t, h, id); !strings.Contains(prev, `"sealed"`) {
		t.Errorf("the imported secret is not the previous one: %s", prev)
	}

	// An import within the overlap replaces the generated secret v2; the
	// next generated one is v4, never v2 issued again.
	h.Triggers.Now = func() time.Time { return clock }
	id = newHook(t, h, hook(map[string]any{"verify": "standard"}))
	issued := map[string]bool{}
	for i, body := range []string{"", `{"secret":"` + imported + `"}`, ""} {
		r := rotate(h, user, id, body)
		if r.Status != 200 {
			t.Fatalf("rotation %d: %d %s", i, r.Status, r.Raw)
		}
		if s, ok := webhookOf(t, r)["secret"].(string); ok {
			if issued[s] {
				t.Errorf("rotation %d issued a secret again: %s", i, r.Raw)
			}
			issued[s] = true
		}
	}
	if v4, _ := h.Secrets.Derive(t.Context(), id, 4); !issued[v4] {
		t.Errorf("the generated secret after the import is not version 4")
	}
}

// TestRotateRefused: each refusal of a rotation, in the contract's order,
// changes nothing and asks nothing of KMS.
func TestRotateRefused(t *testing.T) {
	h := newHarness(t)
	github := newHook(t, h, nil)
	standard := newHook(t, h, hook(map[string]any{"verify": "standard"}))
	scheduled := newTrigger(t, h, nil)
	before, calls := h.Snapshot(), h.KMS.Calls.Load()
	for _, row := range []struct {
		rule     string
		claims   map[string]string
		id, body string
		status   int
	}{
		{"a scheduled trigger", user, scheduled, "", 400},
		{"an import on a github trigger", user, github, `{"secret":"` + imported + `"}`, 400},
		{"a secret that is not importable", user, standard, `{"secret":"whsec_short"}`, 400},
		{"an empty secret", user, standard, `{"secret":""}`, 400},
		{"a secret of another type", user, standard, `{"secret":1}`, 400},
		{"an unknown member", user, standard, `{"version":2}`, 400},
		{"not an object", user, standard, `[]`, 400},
		{"a bad id", user, "trg%20x", "", 400},
		{"another owner's trigger", other, github, "", 404},
		{"no such trigger", user, "trg_none", "", 404},
		{"400 before 404", other, github, `{"x":1}`, 400},
		{"no caller", nil, github, "", 401},
	} {
		t.Run(row.rule, func(t *testing.T) {
			r := rotate(h, row.claims, row.id, row.body)
			if r.Status != row.status {
				t.Errorf("%d %s, want %d", r.Status, r.Raw, row.status)
			}
			if after := h.Snapshot(); after != before || h.KMS.Calls.Load() != calls {
				t.Errorf("the table changed, or KMS was asked:\n%s\n%s", before, after)
			}
		})
	}
	t.Run("KMS unreachable", func(t *testing.T) {
		h.KMS.Close()
		if r := rotate(h, user, github, ""); r.Status != 503 || r.Code() != "service_unavailable" {
			t.Errorf("%d %s", r.Status, r.Raw)
		}
		if after := h.Snapshot(); after != before {
			t.Errorf("the table changed:\n%s\n%s", before, after)
		}
	})
	if r := h.Do(apitest.Call{Method: "GET", Path: "/v1/triggers/" + github + "/secret", Claims: user}); r.Status != 405 {
		t.Errorf("GET: %d %s", r.Status, r.Raw)
	}
}

// runNowFingerprint starts trigger id now with the Idempotency-Key k and
// returns its ledger row's fingerprint: the start's request, its prompt
// included, in canonical form.
func runNowFingerprint(t *testing.T, h *apitest.Harness, id string) string {
	t.Helper()
	if r := runNowCall(h, user, id, "k", ""); r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	for _, it := range h.Items() {
		var row struct {
			PK          struct{ S string }
			Fingerprint struct{ S string } `json:"fingerprint"`
		}
		if json.Unmarshal([]byte(it), &row) == nil && row.PK.S == "OPERATION#u1#trigger:"+id+":now:k" {
			return row.Fingerprint.S
		}
	}
	t.Fatalf("no ledger row for %s", id)
	return ""
}

// TestRunNowWebhook: a start now of a webhook trigger starts the session
// with its template rendered as for an empty delivery (POST, the body {},
// no headers), its secret rendering [redacted], and records a manual run:
// the session's request is the one a scheduled trigger with the rendered
// prompt makes.
func TestRunNowWebhook(t *testing.T) {
	h := newHarness(t)
	for _, row := range []struct {
		rule, template, rendered string
	}{
		{"the empty delivery", "Hi {{method}} {{body}}", "Hi POST {}"},
		{"missing values insert nothing", `Hi {{ json event }}{{ headers }}{{ body.title }}{{ query }}|{{ path }}`, "Hi {}|/v1/hooks/ID"},
	} {
		t.Run(row.rule, func(t *testing.T) {
			hookID := newHook(t, h, map[string]any{"prompt": row.template})
			want := newTrigger(t, h, map[string]any{"prompt": strings.ReplaceAll(row.rendered, "ID", hookID)})
			if got, want := runNowFingerprint(t, h, hookID), runNowFingerprint(t, h, want); got != want {
				t.Errorf("the session's request is not the one of the rendered prompt %q", row.rendered)
			}
			runs := runsCall(h, user, hookID, "")
			if fmt.Sprint(runs.Body["items"].([]any)[0].(map[string]any)["kind"]) != "manual" {
				t.Errorf("runs: %s", runs.Raw)
			}
		})
	}
	t.Run("a keyed start renders no received time, and its retry replays", func(t *testing.T) {
		at := clock
		h.Triggers.Now = func() time.Time { return at }
		defer func() { h.Triggers.Now = nil }()
		id := newHook(t, h, map[string]any{"prompt": "At [{{timestamp}}] {{method}}"})
		first := runNowCall(h, user, id, "retried", "")
		at = at.Add(90 * time.Second)
		retry := runNowCall(h, user, id, "retried", "")
		if first.Status != 201 || retry.Status != 200 || retry.Body["session"].(map[string]any)["sessionId"] != first.Body["session"].(map[string]any)["sessionId"] {
			t.Fatalf("first %d %s, retry %d %s", first.Status, first.Raw, retry.Status, retry.Raw)
		}
		want := newTrigger(t, h, map[string]any{"prompt": "At [] POST"})
		if runNowFingerprint(t, h, id) != runNowFingerprint(t, h, want) {
			t.Error("the keyed start's prompt is not the template with an empty timestamp")
		}
	})
	t.Run("the secret renders [redacted]", func(t *testing.T) {
		r := create(h, user, hookBody(nil))
		id, secret := r.Body["triggerId"].(string), webhookOf(t, r)["secret"].(string)
		if p := patchCall(h, user, id, `{"prompt":"Key `+secret+` {{method}}"}`); p.Status != 200 {
			t.Fatalf("%d %s", p.Status, p.Raw)
		}
		want := newTrigger(t, h, map[string]any{"prompt": "Key [redacted] POST"})
		if runNowFingerprint(t, h, id) != runNowFingerprint(t, h, want) {
			t.Error("the secret is not redacted")
		}
	})
}

// TestRotateTriggerMoved: a rotation is written on the condition that
// the trigger is as it was read: one changed in between is judged again
// (the change stays, the secret is rotated once); one deleted in between
// is 404 with nothing written.
func TestRotateTriggerMoved(t *testing.T) {
	h, p := apitest.Faulty(t)
	h.Triggers.Now = func() time.Time { return clock }
	id := newHook(t, h, nil)
	p.Inject("PutItem", 1, faultproxy.Before(func() {
		_ = h.UpdateTrigger(id, "webhook.events", &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "push"}}})
		_ = h.UpdateTrigger(id, "version", &types.AttributeValueMemberN{Value: "99"})
	}))
	r := rotate(h, user, id, "")
	v2, _ := h.Secrets.Derive(t.Context(), id, 2)
	if w := webhookOf(t, r); r.Status != 200 || w["secret"] != v2 || member(r.Body, "webhook.events") != `["push"]` {
		t.Errorf("changed: %d %s", r.Status, r.Raw)
	}
	if _, prev := storedSecrets(t, h, id); !strings.Contains(prev, `{"N":"1"}`) {
		t.Errorf("the previous secret is not version 1: %s", prev)
	}

	id = newHook(t, h, nil)
	p.Inject("PutItem", 1, faultproxy.Before(func() {
		_, _ = h.Client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(h.Table), Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "TRIGGER#" + id}, "SK": &types.AttributeValueMemberS{Value: "TRIGGER"}}})
	}))
	if r := rotate(h, user, id, ""); r.Status != 404 || count(h, "TRIGGER#"+id) != 0 {
		t.Errorf("deleted: %d %s", r.Status, r.Raw)
	}
}
