package triggerapi

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/ids"
	"github.com/cloud-agent/control-plane/shared/jsonbody"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// Limits of a webhook trigger's members (contract v6).
const (
	maxEvents    = 50
	maxEventName = 100
	maxHeader    = 100
	// previousValid is how long a rotated-out secret keeps proving
	// deliveries.
	previousValid = 24 * time.Hour
)

// webhookBody is a create body's webhook member as JSON has it.
type webhookBody struct {
	Verify *string   `json:"verify"`
	Events *[]string `json:"events"`
	Secret *string   `json:"secret"`
	Header *string   `json:"header"`
}

// importRule says what an imported secret must be.
const importRule = "must be whsec_ and the standard base64 of 24 to 64 bytes"

// parseWebhook validates a create body's webhook member (verify github
// when left out) and returns the trigger's webhook side without its
// secret, and the secret to import ("" for a generated one).
func parseWebhook(m *problem.Members, b *webhookBody) (*trigger.Webhook, string) {
	w := &trigger.Webhook{Verify: webhook.VerifyGitHub}
	if v := m.Optional("webhook.verify", b.Verify); v != "" {
		w.Verify = webhook.VerifyMode(v)
	}
	if !w.Verify.Valid() {
		m.Fail("webhook.verify", "must be github, standard or token")
	}
	if b.Events != nil {
		w.Events = *b.Events
		checkEvents(m, w.Events)
	}
	secret := m.Optional("webhook.secret", b.Secret)
	switch {
	case secret != "" && w.Verify != webhook.VerifyStandard:
		m.Fail("webhook.secret", "is for verify standard only: the other modes' secrets are generated")
	case secret != "" && !webhook.SecretImportable(secret):
		m.Fail("webhook.secret", importRule)
	}
	w.Header = m.Optional("webhook.header", b.Header)
	if w.Header != "" {
		checkHeader(m, w.Verify, w.Header)
	}
	return w, secret
}

// checkEvents holds a webhook trigger's events to their rules: 1 to 50
// names, none twice. An empty list is refused: a trigger that no event
// starts is a mistake (left out, every event starts one).
func checkEvents(m *problem.Members, events []string) {
	switch {
	case len(events) == 0:
		m.Fail("webhook.events", "may not be empty: leave it out for every event")
	case len(events) > maxEvents:
		m.Fail("webhook.events", "holds at most 50 events")
	}
	for i, e := range events {
		if !eventName(e) {
			m.Fail("webhook.events", "holds an event that is not 1 to 100 of A-Z, a-z, 0-9, _, . and -, words apart by single spaces")
		}
		if slices.Contains(events[:i], e) {
			m.Fail("webhook.events", "holds an event twice")
		}
	}
}

// eventName is the rule of an event a trigger lists: 1 to 100 of
// [A-Za-z0-9_.-] and single inner spaces, so that GitLab's names (Push
// Hook, Merge Request Hook) can be listed; no space first or last, none
// twice in a row.
func eventName(e string) bool {
	return len(e) > 0 && len(e) <= maxEventName && strings.IndexFunc(e, notEventChar) < 0 &&
		e[0] != ' ' && e[len(e)-1] != ' ' && !strings.Contains(e, "  ")
}

func notEventChar(c rune) bool { return !isAlnum(c) && c != '_' && c != '.' && c != '-' && c != ' ' }

func isAlnum(c rune) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
}

// reservedHeaders are the headers, lowercase, that a token trigger's own
// header may not be, beside every mode's proof headers
// (webhook.VerifyProofHeader) and reservedPrefixes: those the gateway or a
// proxy owns, and those the hook reads for something else (the event, the
// delivery id), whose value, the secret, would then be recorded in clear.
var reservedHeaders = []string{
	"cookie", "host", "proxy-authorization",
	"x-github-event", "x-gitlab-event", "x-github-delivery", "x-gitlab-event-uuid", "idempotency-key",
	"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "forwarded",
}

// reservedPrefixes are the families of headers a token trigger's own
// header may not be in: the body's (Content-), the Standard Webhooks ones
// with their svix aliases (proofs, ids, timestamps), and the proxies'.
var reservedPrefixes = []string{"content-", "webhook-", "svix-", "x-forwarded-", "x-amzn-"}

// reservedHeader reports whether a token trigger's own header may not be
// h (any case).
func reservedHeader(h string) bool {
	lower := strings.ToLower(h)
	_, proof := webhook.VerifyProofHeader(lower)
	return proof || slices.Contains(reservedHeaders, lower) ||
		slices.ContainsFunc(reservedPrefixes, func(p string) bool { return strings.HasPrefix(lower, p) })
}

// checkHeader holds a token trigger's own header to its rules: 1 to 100 of
// [A-Za-z0-9-], for verify token only, and not a reserved header
// (reservedHeader), which the detail names as sent.
func checkHeader(m *problem.Members, verify webhook.VerifyMode, h string) {
	switch {
	case verify != webhook.VerifyToken:
		m.Fail("webhook.header", "is for verify token only")
	case len(h) > maxHeader || strings.IndexFunc(h, func(c rune) bool { return !isAlnum(c) && c != '-' }) >= 0:
		m.Fail("webhook.header", "must be 1 to 100 of A-Z, a-z, 0-9 and -")
	case reservedHeader(h):
		m.Fail("webhook.header", "may not be "+h+": the hook reads that header for a proof, an event or a delivery id, or the gateway or a proxy owns it")
	}
}

// newSecret makes trigger id's secret at: the imported one sealed (nothing
// to show back), else the generated one of version derived, and shown.
func (s *Service) newSecret(ctx context.Context, id, imported string, version int, at time.Time) (sec trigger.Secret, shown string, err error) {
	if imported != "" {
		sealed, err := s.Secrets.Seal(ctx, id, imported)
		return trigger.Secret{Version: version, Sealed: sealed, CreatedAt: at}, "", err
	}
	shown, err = s.Secrets.Derive(ctx, id, version)
	return trigger.Secret{Version: version, CreatedAt: at}, shown, err
}

// rotateBody is a POST /v1/triggers/{triggerId}/secret body: no body or
// {} for a new generated secret, or the secret to import.
type rotateBody struct {
	Secret *string `json:"secret"`
}

// rotate gives one of the caller's webhook triggers a new secret: a
// generated one (shown in this answer only) or an imported one (standard
// only, never shown back). The current secret stays valid for 24 hours as
// the previous one; while a previous one is still valid, only the
// current one is replaced, so a retried rotation never ends the secret
// senders use. Written on the condition that the trigger is as read
// (settled).
func (s *Service) rotate(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var b rotateBody
	if len(r.Body) > 0 {
		if err := jsonbody.Decode(r.Body, &b); err != nil {
			return httpapi.Response{}, err
		}
	}
	var m problem.Members
	imported := m.Optional("secret", b.Secret)
	if imported != "" && !webhook.SecretImportable(imported) {
		m.Fail("secret", importRule)
	}
	if err := m.Err(); err != nil {
		return httpapi.Response{}, err
	}
	if !ids.IsPathID(r.Params["triggerId"]) {
		return httpapi.Response{}, bad("The trigger id is not valid.")
	}
	return s.settled(ctx, r, func(tr *trigger.Trigger) (httpapi.Response, error) {
		switch {
		case tr.Webhook == nil:
			return httpapi.Response{}, bad("A scheduled trigger has no secret to rotate.")
		case imported != "" && tr.Webhook.Verify != webhook.VerifyStandard:
			return httpapi.Response{}, bad("secret is for verify standard only: the other modes' secrets are generated.")
		}
		next, shown, err := s.rotated(ctx, tr, imported, s.now().UTC())
		if err != nil {
			return httpapi.Response{}, err
		}
		if err := s.Table.UpdateTrigger(ctx, tr, next); err != nil {
			return httpapi.Response{}, err
		}
		v := s.written(ctx, next)
		v.Webhook.Secret = shown
		return httpapi.Response{Status: http.StatusOK, Body: v}, nil
	})
}

// rotated is the webhook trigger tr with a new current secret made at now
// (imported or generated, with the highest version it holds plus one: the
// current one's, which is always the highest, unless an import stored
// before imports had versions is current);
// the current one becomes the previous one, valid for previousValid,
// unless a previous one is still valid, which stays.
func (s *Service) rotated(ctx context.Context, tr *trigger.Trigger, imported string, now time.Time) (*trigger.Trigger, string, error) {
	w := *tr.Webhook
	version := w.Secret.Version + 1
	if w.Previous != nil {
		version = max(version, w.Previous.Version+1)
	}
	if w.Previous == nil || !w.Previous.ValidUntil.After(now) {
		prev := w.Secret
		prev.ValidUntil = now.Add(previousValid)
		w.Previous = &prev
	}
	sec, shown, err := s.newSecret(ctx, tr.ID, imported, version, now)
	if err != nil {
		return nil, "", err
	}
	w.Secret = sec
	next := *tr
	next.Webhook = &w
	return &next, shown, nil
}
