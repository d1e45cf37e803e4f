package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// Delivery is what a proven delivery is: its event and its identity.
type Delivery struct {
	// Mode is the trigger's verify mode, which said where to read the rest.
	Mode VerifyMode
	// Event is X-GitHub-Event (github), X-Gitlab-Event (token) or the JSON
	// body's top-level "type" (standard); "" when there is none (null), and
	// when it is over EventMax code points or holds a control character:
	// such an event is recorded null and matches no entry.
	Event string
	// Action is the JSON body's top-level "action", or "". The JSON body is
	// the raw body, or a form body's payload (GitHub's form mode), as the
	// template reads it.
	Action string
	// ID is the sender's id of the delivery, the run's and the answer's
	// "delivery": X-GitHub-Delivery, webhook-id, X-Gitlab-Event-UUID or
	// Idempotency-Key; "" when there is none (null).
	ID string
	// Key is what the proof signed that tells deliveries apart: the
	// webhook-id (standard), the hex SHA-256 of the body (github), or
	// X-Gitlab-Event-UUID, else Idempotency-Key (token). "" when there is
	// none: every such delivery starts a session.
	Key string
}

// DeliveryMaxID is the longest delivery header: 1 to 128 of A-Z, a-z,
// 0-9, "_", ".", ":" and "-".
const DeliveryMaxID = 128

// EventMax is the most code points of a delivery's event.
const EventMax = 100

// deliveryHeaders are each mode's delivery headers, lowercase, by their
// names as senders spell them, in the order the key is taken from.
var deliveryHeaders = map[VerifyMode][][2]string{
	VerifyGitHub:   {{"x-github-delivery", "X-GitHub-Delivery"}},
	VerifyStandard: {{"webhook-id", "webhook-id"}, {"svix-id", "svix-id"}},
	VerifyToken:    {{"x-gitlab-event-uuid", "X-Gitlab-Event-UUID"}, {"idempotency-key", "Idempotency-Key"}},
}

// DeliveryOf reads a proven delivery's event and identity from its
// headers and raw body under the trigger's mode. A body that is not valid
// UTF-8, or a delivery header of the mode that is sent but is not 1 to
// DeliveryMaxID of A-Z, a-z, 0-9, "_", ".", ":" and "-" (a repeated one,
// joined by a comma, is not), is invalid_request.
func DeliveryOf(mode VerifyMode, headers map[string]string, body []byte) (Delivery, error) {
	if !utf8.Valid(body) {
		return Delivery{}, problem.New(problem.InvalidRequest, "The body is not valid UTF-8.")
	}
	d := Delivery{Mode: mode}
	for _, h := range deliveryHeaders[mode] {
		v, ok := header(headers, h[0])
		if !ok {
			continue
		}
		if !deliveryID(v) {
			return Delivery{}, problem.New(problem.InvalidRequest, "The "+h[1]+" header must be 1 to 128 of A-Z, a-z, 0-9, '_', '.', ':' and '-'.")
		}
		if d.ID == "" {
			d.ID = v
		}
	}
	typ, action := topMembers(jsonBody(body))
	d.Action = action
	switch mode {
	case VerifyGitHub:
		d.Event, _ = header(headers, eventHeaders[mode])
		sum := sha256.Sum256(body)
		d.Key = hex.EncodeToString(sum[:])
	case VerifyStandard:
		d.Event, d.Key = typ, d.ID
	case VerifyToken:
		d.Event, _ = header(headers, eventHeaders[mode])
		d.Key = d.ID
	}
	if !boundedEvent(d.Event) {
		d.Event = ""
	}
	return d, nil
}

// boundedEvent reports whether an event may be recorded and matched: at
// most EventMax code points, none of them a control character.
func boundedEvent(e string) bool {
	return utf8.RuneCountInString(e) <= EventMax && strings.IndexFunc(e, unicode.IsControl) < 0
}

// Ping reports whether the delivery is GitHub's ping, which is answered
// and starts nothing.
func (d Delivery) Ping() bool { return d.Mode == VerifyGitHub && d.Event == "ping" }

// Listed reports whether a trigger's events let the delivery start a
// session: an entry "name" matches the delivery's event, "name.action"
// also its action. events nil (absent or null) lets every delivery
// through; an empty, non-nil list lets none; a delivery without an event
// matches no entry.
func (d Delivery) Listed(events []string) bool {
	if events == nil {
		return true
	}
	for _, e := range events {
		if d.Event != "" && (e == d.Event || d.Action != "" && e == d.Event+"."+d.Action) {
			return true
		}
	}
	return false
}

// OperationKey is the start's operation key for the delivery:
// "trigger:<triggerId>:hook:" and the first 32 hex characters of the
// SHA-256 of "<verify>:<key>"; "" when the delivery has no key.
func (d Delivery) OperationKey(triggerID string) string {
	if d.Key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(string(d.Mode) + ":" + d.Key))
	return "trigger:" + triggerID + ":hook:" + hex.EncodeToString(sum[:16])
}

// deliveryID is the rule of a delivery header's value.
func deliveryID(s string) bool {
	if len(s) == 0 || len(s) > DeliveryMaxID {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// topMembers is the JSON body's top-level "type" and "action" when they
// are strings; "" for either when the body is not one JSON object (with no
// name twice) or the member is absent or not a string. Names match
// exactly.
func topMembers(body []byte) (typ, action string) {
	var top struct {
		Type   jsontext.Value `json:"type"`
		Action jsontext.Value `json:"action"`
	}
	if json.Unmarshal(body, &top) != nil {
		return "", ""
	}
	return jsonString(top.Type), jsonString(top.Action)
}

func jsonString(v jsontext.Value) string {
	var s string
	if v.Kind() != '"' || json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}
