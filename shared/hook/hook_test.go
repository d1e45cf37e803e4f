package hook_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

// clock is the deliveries' time: 30 seconds into a minute.
var clock = time.Date(2026, 12, 2, 10, 0, 30, 0, time.UTC)

// hooked is a webhook trigger as stored, with its secret in clear.
type hooked struct {
	*trigger.Trigger
	secret string
}

// harness is the API with the hook and the start at the clock.
func harness(t testing.TB) *apitest.Harness {
	t.Helper()
	h := apitest.New(t, nil)
	h.Hooks.Now = func() time.Time { return clock }
	h.Start.Now = h.Hooks.Now
	return h
}

// newHook stores a webhook trigger of user u1 with a generated secret,
// verify github and every event, changed by set, and derives its secret
// (which the harness's keys then hold).
func newHook(t testing.TB, h *apitest.Harness, set func(*trigger.Trigger)) hooked {
	t.Helper()
	tr := &trigger.Trigger{
		ID: "trg_" + uuid.NewString(), UserID: "u1", Active: true,
		Repository: session.Repository{Type: "github", Repo: "acme/app"},
		Agent:      session.Agent{Mode: "code", Model: "provider/model-name"},
		Prompt:     "Review {{ body.pull_request.title }} ({{ event }})",
		CreatedAt:  clock.Add(-time.Hour), Version: 1,
		Webhook: &trigger.Webhook{Verify: webhook.VerifyGitHub, Secret: trigger.Secret{Version: 1, CreatedAt: clock.Add(-time.Hour)}},
	}
	if set != nil {
		set(tr)
	}
	ctx := context.Background()
	if err := h.Triggers.Table.CreateTrigger(ctx, tr, 100); err != nil {
		t.Fatal(err)
	}
	var secret string
	var err error
	if tr.Webhook.Secret.Sealed != nil {
		secret, err = h.Secrets.Open(ctx, tr.ID, tr.Webhook.Secret.Sealed)
	} else {
		secret, err = h.Secrets.Derive(ctx, tr.ID, tr.Webhook.Secret.Version)
	}
	if err != nil {
		t.Fatal(err)
	}
	return hooked{tr, secret}
}

// sealed makes a trigger's current secret the imported one, as the
// table keeps it.
func sealed(t *testing.T, h *apitest.Harness, tr *trigger.Trigger, secret string) {
	t.Helper()
	b, err := h.Secrets.Seal(context.Background(), tr.ID, secret)
	if err != nil {
		t.Fatal(err)
	}
	tr.Webhook.Secret = trigger.Secret{Sealed: b, CreatedAt: tr.CreatedAt}
}

// signed are the proof headers of the trigger's mode for body, with
// more headers; id is a standard delivery's webhook-id.
func (hk hooked) signed(t *testing.T, id, body string, more map[string]string) map[string]string {
	t.Helper()
	headers, err := webhook.DeliveryProof(hk.Webhook.Verify, hk.secret, id, clock, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range more {
		headers[strings.ToLower(k)] = v
	}
	return headers
}

// deliver posts a delivery to the trigger id.
func deliver(h *apitest.Harness, id string, headers map[string]string, body string) apitest.Result {
	return h.Deliver(apitest.Call{Method: "POST", Path: "/v1/hooks/" + id, Headers: headers, Body: body})
}

// prBody is a GitHub pull request event's body.
func prBody(action, title string) string {
	return `{"action":"` + action + `","pull_request":{"title":"` + title + `"}}`
}

// github is GitHub's delivery headers beside the signature.
func github(event, delivery string) map[string]string {
	return map[string]string{"X-GitHub-Event": event, "X-GitHub-Delivery": delivery}
}

// runs are the trigger's runs, newest first.
func runs(t *testing.T, h *apitest.Harness, id string) []trigger.Run {
	t.Helper()
	_, rs, _, err := h.Triggers.Table.ListRuns(context.Background(), id, "", 100, nil, clock)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// limit sets webhook/deliveries-per-minute.
func limit(h *apitest.Harness, n string) {
	h.SetSettings([]settings.Parameter{{Name: "webhook/deliveries-per-minute", Type: "String", Value: n}})
}
