package webhook

import (
	"net/url"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// TestFormModeEvents: a GitHub delivery in form mode
// (application/x-www-form-urlencoded, payload=<json>) has its action,
// and a standard one its type, read from the payload, as the template
// reads body.<path>; so "name.action" entries match it.
func TestFormModeEvents(t *testing.T) {
	form := "payload=" + url.QueryEscape(`{"action":"opened","type":"invoice.paid"}`)
	gh, err := DeliveryOf(VerifyGitHub, hdr("x-github-event", "pull_request"), []byte(form))
	if err != nil || gh.Action != "opened" || !gh.Listed([]string{"pull_request.opened"}) || gh.Listed([]string{"pull_request.closed"}) {
		t.Errorf("github form: %+v %v", gh, err)
	}
	st, err := DeliveryOf(VerifyStandard, hdr("webhook-id", "m1"), []byte(form))
	if err != nil || st.Event != "invoice.paid" || st.Action != "opened" {
		t.Errorf("standard form: %+v %v", st, err)
	}
	// A body that is JSON is read as it is, whatever it holds.
	js, _ := DeliveryOf(VerifyGitHub, hdr("x-github-event", "push"), []byte(`{"payload":"x","action":"a"}`))
	if js.Action != "a" {
		t.Errorf("json body: %+v", js)
	}
	// A form without payload, or one whose payload is not JSON, has none.
	for _, body := range []string{"action=opened", "payload=" + url.QueryEscape("not json")} {
		if d, _ := DeliveryOf(VerifyGitHub, hdr("x-github-event", "push"), []byte(body)); d.Action != "" {
			t.Errorf("%q: %+v", body, d)
		}
	}
}

// TestBoundedEvent: an event over EventMax code points, or with a control
// character, is no event (recorded null, matching no entry); EventMax
// code points of 4-byte characters are kept.
func TestBoundedEvent(t *testing.T) {
	most := strings.Repeat("😀", EventMax)
	for _, r := range []struct {
		rule, event string
		kept        bool
	}{
		{"EventMax code points of 4-byte characters", most, true},
		{"one more", most + "a", false},
		{"a newline", "push\nHook", false},
		{"a tab", "push\tHook", false},
		{"DEL", "push\x7f", false},
		{"a C1 control", "push\u0085", false},
	} {
		d, err := DeliveryOf(VerifyToken, hdr("x-gitlab-event", r.event), []byte(`{}`))
		if err != nil || (d.Event == r.event) != r.kept || !r.kept && (d.Event != "" || d.Listed([]string{r.event})) {
			t.Errorf("%s: %+v %v", r.rule, d, err)
		}
	}
	d, _ := DeliveryOf(VerifyStandard, hdr("webhook-id", "m1"), []byte(`{"type":"`+strings.Repeat("a", EventMax+1)+`"}`))
	if d.Event != "" {
		t.Errorf("a standard type over EventMax: %+v", d)
	}
}

// TestCheckHeaders: a header the delivery is judged on whose value is not
// valid UTF-8 is 400 naming it (never repaired); the other modes'
// headers are not read.
func TestCheckHeaders(t *testing.T) {
	bad := "a\xffb"
	for _, r := range []struct {
		rule, own string
		mode      VerifyMode
		h         map[string]string
		refused   bool
	}{
		{"github: the event", "", VerifyGitHub, hdr("X-GitHub-Event", bad), true},
		{"github: the delivery id", "", VerifyGitHub, hdr("x-github-delivery", bad), true},
		{"github: the signature", "", VerifyGitHub, hdr("x-hub-signature-256", bad), true},
		{"standard: the signature", "", VerifyStandard, hdr("webhook-signature", "v1,abc "+bad), true},
		{"standard: an alias", "", VerifyStandard, hdr("svix-id", bad), true},
		{"token: the event", "", VerifyToken, hdr("x-gitlab-event", bad), true},
		{"token: the own header", "X-Webhook-Secret", VerifyToken, hdr("x-webhook-secret", bad), true},
		{"the content type", "", VerifyToken, hdr("content-type", "text/plain; x="+bad), true},
		{"github: the event as the runtime hands it (U+FFFD)", "", VerifyGitHub, hdr("X-GitHub-Event", "pull\uFFFDrequest"), true},
		{"token: the event as the runtime hands it (U+FFFD)", "", VerifyToken, hdr("x-gitlab-event", "Push \uFFFD Hook"), true},
		{"github: another mode's proof header is not read", "", VerifyGitHub, hdr("x-gitlab-token", bad, "webhook-signature", bad), false},
		{"a header no one reads", "", VerifyGitHub, hdr("x-other", bad), false},
	} {
		err := CheckHeaders(r.mode, r.own, r.h)
		if (err != nil) != r.refused || err != nil && problem.CodeOf(err) != problem.InvalidRequest {
			t.Errorf("%s: %v", r.rule, err)
		}
	}
}

// TestRedact: every form of the current and the previous secret is
// [redacted]; other text stays.
func TestRedact(t *testing.T) {
	cur, prev := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_a+b/c="
	got := Redact("x "+cur+" y a+b/c= z "+url.QueryEscape("a+b/c="), cur, prev, "")
	if want := "x [redacted] y [redacted] z [redacted]"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got := Redact("plain", cur); got != "plain" {
		t.Errorf("%q", got)
	}
}
