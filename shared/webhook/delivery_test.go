package webhook

import (
	"errors"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/shared/problem"
)

const prBody = `{"action":"opened","number":7,"pull_request":{"action":"closed","type":"inner"}}`

func TestDeliveryOf(t *testing.T) {
	const uuid = "0b3c5d6e-1f2a-4b3c-8d4e-5f6a7b8c9d0e"
	for _, r := range []struct {
		rule string
		mode VerifyMode
		h    map[string]string
		body string
		want Delivery
	}{
		{"events: X-GitHub-Event; delivery: X-GitHub-Delivery; key: the SHA-256 of the body", VerifyGitHub,
			hdr("x-github-event", "pull_request", "x-github-delivery", uuid), prBody,
			Delivery{Mode: VerifyGitHub, Event: "pull_request", Action: "opened", ID: uuid, Key: sha256Hex(prBody)}},
		{"github: without X-GitHub-Delivery the key is still the body's", VerifyGitHub,
			hdr("x-github-event", "push"), ghBody,
			Delivery{Mode: VerifyGitHub, Event: "push", Key: "dffd6021bb2bd5b0af676290809ec3a53191dd81c7f70a4b28688a362182986f"}},
		{"github: no X-GitHub-Event is no event", VerifyGitHub, hdr(), `{}`,
			Delivery{Mode: VerifyGitHub, Key: sha256Hex(`{}`)}},
		{"events: the JSON body's top-level type (standard); key and delivery: webhook-id", VerifyStandard,
			hdr("webhook-id", swID, "x-github-event", "push", "x-gitlab-event", "Push Hook"), `{"type":"invoice.paid","data":{"type":"inner"}}`,
			Delivery{Mode: VerifyStandard, Event: "invoice.paid", ID: swID, Key: swID}},
		{"standard: svix-id is webhook-id's alias", VerifyStandard, hdr("svix-id", swID), `{"type":"a"}`,
			Delivery{Mode: VerifyStandard, Event: "a", ID: swID, Key: swID}},
		{"standard: a type that is not a string is no event", VerifyStandard, hdr("webhook-id", swID), `{"type":7,"action":"x"}`,
			Delivery{Mode: VerifyStandard, Action: "x", ID: swID, Key: swID}},
		{"standard: a body that is not JSON has no event", VerifyStandard, hdr("webhook-id", swID), `type=push`,
			Delivery{Mode: VerifyStandard, ID: swID, Key: swID}},
		{"standard: a body with a name twice has no event", VerifyStandard, hdr("webhook-id", swID), `{"type":"a","type":"b"}`,
			Delivery{Mode: VerifyStandard, ID: swID, Key: swID}},
		{"standard: the member's name matches exactly", VerifyStandard, hdr("webhook-id", swID), `{"Type":"a","ACTION":"b"}`,
			Delivery{Mode: VerifyStandard, ID: swID, Key: swID}},
		{"events: X-Gitlab-Event (token); key and delivery: X-Gitlab-Event-UUID before Idempotency-Key", VerifyToken,
			hdr("x-gitlab-event", "Push Hook", "x-gitlab-event-uuid", uuid, "idempotency-key", "k-1"), `{"object_kind":"push"}`,
			Delivery{Mode: VerifyToken, Event: "Push Hook", ID: uuid, Key: uuid}},
		{"token: else Idempotency-Key", VerifyToken, hdr("idempotency-key", "run:2026-03-01"), ``,
			Delivery{Mode: VerifyToken, ID: "run:2026-03-01", Key: "run:2026-03-01"}},
		{"token: without either, no key (every delivery starts a session) and no delivery", VerifyToken,
			hdr("x-github-delivery", uuid, "webhook-id", swID), `{"type":"x","action":"y"}`,
			Delivery{Mode: VerifyToken, Action: "y"}},
		{"delivery header: 128 of [A-Za-z0-9_.:-] is kept", VerifyToken, hdr("idempotency-key", strings.Repeat("aZ9_.:-", 18)+"ab"), ``,
			Delivery{Mode: VerifyToken, ID: strings.Repeat("aZ9_.:-", 18) + "ab", Key: strings.Repeat("aZ9_.:-", 18) + "ab"}},
		{"only the trigger's mode's delivery headers count", VerifyGitHub, hdr("webhook-id", "not valid!", "idempotency-key", "a b"), `{}`,
			Delivery{Mode: VerifyGitHub, Key: sha256Hex(`{}`)}},
	} {
		got, err := DeliveryOf(r.mode, r.h, []byte(r.body))
		if err != nil || got != r.want {
			t.Errorf("%s:\n got %+v %v\nwant %+v", r.rule, got, err, r.want)
		}
	}
}

// TestDeliveryOfRefused: the 400 of the order of checks.
func TestDeliveryOfRefused(t *testing.T) {
	for _, r := range []struct {
		rule string
		mode VerifyMode
		h    map[string]string
		body string
	}{
		{"the body is not valid UTF-8", VerifyGitHub, hdr(), "{\"a\":\"\xff\"}"},
		{"delivery header: over 128", VerifyGitHub, hdr("x-github-delivery", strings.Repeat("a", 129)), `{}`},
		{"delivery header: empty", VerifyGitHub, hdr("x-github-delivery", ""), `{}`},
		{"delivery header: a space", VerifyStandard, hdr("webhook-id", "msg 1"), `{}`},
		{"delivery header: svix-id too", VerifyStandard, hdr("svix-id", "msg/1"), `{}`},
		{"delivery header: repeated, joined by a comma", VerifyToken, hdr("x-gitlab-event-uuid", "a,b"), `{}`},
		{"delivery header: one name in two spellings", VerifyToken, hdr("idempotency-key", "a", "Idempotency-Key", "a"), `{}`},
		{"delivery header: Idempotency-Key beside X-Gitlab-Event-UUID is held to the rule too", VerifyToken,
			hdr("x-gitlab-event-uuid", "a", "idempotency-key", "é"), `{}`},
	} {
		_, err := DeliveryOf(r.mode, r.h, []byte(r.body))
		var pe *problem.Error
		if !errors.As(err, &pe) || pe.Code != problem.InvalidRequest || pe.Code.Status() != 400 {
			t.Errorf("%s: %v, want invalid_request", r.rule, err)
		}
	}
}

func TestDeliveryPing(t *testing.T) {
	for _, r := range []struct {
		rule string
		d    Delivery
		want bool
	}{
		{"a GitHub ping", Delivery{Mode: VerifyGitHub, Event: "ping"}, true},
		{"a ping is GitHub's only", Delivery{Mode: VerifyToken, Event: "ping"}, false},
		{"a ping by its name exactly", Delivery{Mode: VerifyGitHub, Event: "Ping"}, false},
	} {
		if got := r.d.Ping(); got != r.want {
			t.Errorf("%s: %v", r.rule, got)
		}
	}
}

func TestDeliveryListed(t *testing.T) {
	pr := Delivery{Mode: VerifyGitHub, Event: "pull_request", Action: "opened"}
	for _, r := range []struct {
		rule   string
		d      Delivery
		events []string
		want   bool
	}{
		{"events absent or null: every event", pr, nil, true},
		{"events absent or null: a delivery without an event too", Delivery{Mode: VerifyToken}, nil, true},
		{"events: name matches the delivery's event", pr, []string{"push", "pull_request"}, true},
		{"events: name.action also its action", pr, []string{"pull_request.opened"}, true},
		{"events: name.action with another action", pr, []string{"pull_request.closed"}, false},
		{"events: another event", pr, []string{"push", "issues.opened"}, false},
		{"events: a dotted event name matches as a name", Delivery{Mode: VerifyStandard, Event: "invoice.paid"}, []string{"invoice.paid"}, true},
		{"events: name.action needs an action", Delivery{Mode: VerifyGitHub, Event: "push"}, []string{"push."}, false},
		{"events: a delivery without an event matches no entry", Delivery{Mode: VerifyToken, Action: "opened"}, []string{".opened", ""}, false},
		{"events: names match exactly", pr, []string{"Pull_Request"}, false},
		{"events: an empty list lets none through", pr, []string{}, false},
	} {
		if got := r.d.Listed(r.events); got != r.want {
			t.Errorf("%s: %v", r.rule, got)
		}
	}
}

func TestDeliveryOperationKey(t *testing.T) {
	const id = "trg_0b3c5d6e-1f2a-4b3c-8d4e-5f6a7b8c9d0e"
	for _, r := range []struct {
		rule string
		d    Delivery
		want string
	}{
		{"operation key: trigger:<triggerId>:hook: + 32 hex of SHA-256(<verify>:<key>)",
			Delivery{Mode: VerifyStandard, Key: swID}, "trigger:" + id + ":hook:d66eeba45f9686ce69f37772ef2cb508"},
		{"operation key: github's key is the body's SHA-256 in hex",
			Delivery{Mode: VerifyGitHub, Key: "dffd6021bb2bd5b0af676290809ec3a53191dd81c7f70a4b28688a362182986f"}, "trigger:" + id + ":hook:f29c410288b13f071f71ef7532f5fd0b"},
		{"operation key: the verify mode is part of it",
			Delivery{Mode: VerifyToken, Key: swID}, "trigger:" + id + ":hook:" + sha256Hex("token:" + swID)[:32]},
		{"operation key: none without a delivery key", Delivery{Mode: VerifyToken}, ""},
	} {
		if got := r.d.OperationKey(id); got != r.want {
			t.Errorf("%s: %q, want %q", r.rule, got, r.want)
		}
	}
}
