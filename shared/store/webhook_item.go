package store

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// encodeWebhook returns a webhook trigger's webhook map: verify, events?
// (L of S; absent for every event), header?, secret and previous? (each
// {version (N) and/or sealed (B), createdAt, validUntil? (the previous
// one's)}). No secret is in it in clear: a generated one by its version,
// an imported one sealed.
func encodeWebhook(w *trigger.Webhook) types.AttributeValue {
	m := Item{"verify": S(string(w.Verify)), "secret": encodeSecret(w.Secret)}
	if w.Events != nil {
		m["events"] = L(w.Events)
	}
	PutS(m, "header", w.Header)
	if w.Previous != nil {
		m["previous"] = encodeSecret(*w.Previous)
	}
	return M(m)
}

func encodeSecret(s trigger.Secret) types.AttributeValue {
	m := Item{"createdAt": S(formatTime(s.CreatedAt))}
	if s.Sealed != nil {
		m["sealed"] = &types.AttributeValueMemberB{Value: s.Sealed}
	}
	if s.Version > 0 {
		m["version"] = N(int64(s.Version))
	}
	PutS(m, "validUntil", formatTime(s.ValidUntil))
	return M(m)
}

// decodeWebhook reads a webhook map into r: a verify mode of the three,
// a current secret, and each secret either generated (a version from 1)
// or sealed (imported: with the version it took, or none).
func decodeWebhook(r *AttrReader, m Item) *trigger.Webhook {
	const p = "webhook."
	w := &trigger.Webhook{Verify: webhook.VerifyMode(r.Str(m, p, "verify")), Header: r.Str(m, p, "header")}
	w.Events, _ = r.Strings(m, p, "events")
	if !w.Verify.Valid() {
		r.Fail("webhook.verify is not github, standard or token")
	}
	if s, ok := r.Map(m, p, "secret"); ok {
		w.Secret = decodeSecret(r, s, p+"secret.")
	} else {
		r.Fail("webhook.secret is missing")
	}
	if s, ok := r.Map(m, p, "previous"); ok {
		prev := decodeSecret(r, s, p+"previous.")
		w.Previous = &prev
	}
	return w
}

func decodeSecret(r *AttrReader, m Item, path string) trigger.Secret {
	s := trigger.Secret{
		Version: int(r.Int(m, path, "version")), Sealed: r.Bytes(m, path, "sealed"),
		CreatedAt: r.Time(m, path, "createdAt", session.TimeFormat), ValidUntil: r.Time(m, path, "validUntil", session.TimeFormat),
	}
	if s.Version < 0 || s.Version == 0 && len(s.Sealed) == 0 {
		r.Fail("%sversion: a version from 1, or %ssealed with a version or none", path, path)
	}
	return s
}
