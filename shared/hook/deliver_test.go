package hook_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// TestGitHubExample: GitHub's published example verifies end to end:
// secret "It's a Secret to Everybody", body "Hello, World!", its
// X-Hub-Signature-256. The secret is no generated one, so the trigger
// keeps it sealed, as the table keeps an imported secret.
func TestGitHubExample(t *testing.T) {
	h := harness(t)
	hk := newHook(t, h, func(tr *trigger.Trigger) {
		sealed(t, h, tr, "It's a Secret to Everybody")
		tr.Prompt = "Got {{ body }} on {{ event }}"
	})
	res := deliver(h, hk.ID, map[string]string{
		"X-Hub-Signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
		"X-GitHub-Event":      "push", "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
		"Content-Type": "text/plain",
	}, "Hello, World!")
	if res.Status != 201 || res.Body["delivery"] != "72d3162e-cc78-11e3-81ab-4c9367dc0958" || res.Body["replayed"] != false {
		t.Fatalf("%d %s", res.Status, res.Raw)
	}
	id, _ := res.Body["sessionId"].(string)
	if res.Headers["Location"] != "/v1/sessions/"+id+"/allocation" {
		t.Errorf("Location %q", res.Headers["Location"])
	}
	rs := runs(t, h, hk.ID)
	if len(rs) != 1 || rs[0].Kind != trigger.KindWebhook || rs[0].SessionID != id || rs[0].Prompt != "Got Hello, World! on push" ||
		rs[0].PromptLength != 25 || rs[0].Event != "push" || rs[0].Delivery != "72d3162e-cc78-11e3-81ab-4c9367dc0958" ||
		!rs[0].At.Equal(clock) || rs[0].Status != trigger.StatusFired {
		t.Errorf("runs %+v", rs)
	}
	// The session keeps the run that started it (contract v7).
	if tr := h.Session(id).Trigger; tr == nil || tr.ID != hk.ID || tr.Kind != trigger.KindWebhook || !tr.Slot.Equal(clock) ||
		tr.RunKey != "RUN#"+clock.UTC().Format("2006-01-02T15:04:05.000Z")+"#"+id {
		t.Errorf("the session's trigger section %+v", tr)
	}
	rec, err := h.Start.Table.GetSession(context.Background(), id)
	if err != nil || rec.CreatedOnPlatform != "webhook" || rec.UserID != "u1" || rec.BotID != "" {
		t.Errorf("session %+v: %v", rec, err)
	}
	// The same body again is the same delivery (its key is the body's
	// SHA-256): 200 from its run.
	again := deliver(h, hk.ID, map[string]string{
		"X-Hub-Signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
		"X-GitHub-Event":      "push", "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
		"Content-Type": "text/plain",
	}, "Hello, World!")
	if again.Status != 200 || again.Body["sessionId"] != id || again.Body["replayed"] != true || len(runs(t, h, hk.ID)) != 1 {
		t.Errorf("redelivered: %d %s", again.Status, again.Raw)
	}
}

// TestStandard: a Standard Webhooks delivery with an imported secret, by
// its webhook-* headers or their svix-* aliases; its key is the
// webhook-id, its event the body's type; a timestamp more than 5 minutes
// from the clock is 401.
func TestStandard(t *testing.T) {
	h := harness(t)
	hk := newHook(t, h, func(tr *trigger.Trigger) {
		tr.Webhook.Verify = webhook.VerifyStandard
		sealed(t, h, tr, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	})
	body := `{"type":"invoice.paid","data":{}}`
	res := deliver(h, hk.ID, hk.signed(t, "msg_1", body, nil), body)
	if res.Status != 201 || res.Body["delivery"] != "msg_1" {
		t.Fatalf("%d %s", res.Status, res.Raw)
	}
	svix := map[string]string{}
	for k, v := range hk.signed(t, "msg_1", body, nil) {
		svix[strings.Replace(k, "webhook-", "svix-", 1)] = v
	}
	if again := deliver(h, hk.ID, svix, body); again.Status != 200 || again.Body["sessionId"] != res.Body["sessionId"] {
		t.Errorf("svix aliases, the same webhook-id: %d %s", again.Status, again.Raw)
	}
	if rs := runs(t, h, hk.ID); len(rs) != 1 || rs[0].Event != "invoice.paid" {
		t.Errorf("runs %+v", rs)
	}
	stale, _ := webhook.DeliveryProof(webhook.VerifyStandard, hk.secret, "msg_2", clock.Add(-6*time.Minute), []byte(body))
	if r := deliver(h, hk.ID, stale, body); r.Status != 401 {
		t.Errorf("a stale timestamp: %d %s", r.Status, r.Raw)
	}
}

// TestToken: a token delivery by X-Gitlab-Token, Authorization: Bearer or
// the trigger's own header; its key is X-Gitlab-Event-UUID, else
// Idempotency-Key; without either every delivery starts a session.
func TestToken(t *testing.T) {
	h := harness(t)
	hk := newHook(t, h, func(tr *trigger.Trigger) {
		tr.Webhook.Verify, tr.Webhook.Header = webhook.VerifyToken, "X-Webhook-Secret"
	})
	body := `{"object_kind":"push"}`
	rows := []struct {
		rule    string
		headers map[string]string
		status  int
	}{
		{"X-Gitlab-Token, keyed by X-Gitlab-Event-UUID", map[string]string{"X-Gitlab-Token": hk.secret, "X-Gitlab-Event": "Push Hook", "X-Gitlab-Event-UUID": "u-1"}, 201},
		{"the same UUID by Bearer is a redelivery", map[string]string{"Authorization": "Bearer " + hk.secret, "X-Gitlab-Event-UUID": "u-1"}, 200},
		{"the trigger's own header, keyed by Idempotency-Key", map[string]string{"X-Webhook-Secret": hk.secret, "Idempotency-Key": "k-1"}, 201},
		{"the same Idempotency-Key again", map[string]string{"X-Webhook-Secret": hk.secret, "Idempotency-Key": "k-1"}, 200},
		{"no key: a new session", map[string]string{"X-Gitlab-Token": hk.secret}, 201},
		{"no key again: another new session", map[string]string{"X-Gitlab-Token": hk.secret}, 201},
		{"a wrong token", map[string]string{"X-Gitlab-Token": hk.secret + "x"}, 401},
		{"a GitHub signature does not count for a token trigger", map[string]string{"X-Hub-Signature-256": "sha256=" + strings.Repeat("0", 64)}, 401},
	}
	sessions := map[any]bool{}
	for _, r := range rows {
		res := deliver(h, hk.ID, r.headers, body)
		if res.Status != r.status {
			t.Errorf("%s: %d %s", r.rule, res.Status, res.Raw)
		}
		if res.Status == 201 {
			sessions[res.Body["sessionId"]] = true
		}
	}
	events := map[string]int{}
	for _, r := range runs(t, h, hk.ID) {
		events[r.Event]++
	}
	if len(sessions) != 4 || events["Push Hook"] != 1 || events[""] != 3 {
		t.Errorf("%d sessions, runs by event %v", len(sessions), events)
	}
}
