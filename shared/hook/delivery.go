package hook

import (
	"context"
	"time"

	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// modes are the verify modes, for the keys a delivery may have before its
// trigger says which is its.
var modes = []webhook.VerifyMode{webhook.VerifyGitHub, webhook.VerifyStandard, webhook.VerifyToken}

// candidateKeys are the operation keys the delivery has under each mode
// that gives it one: the delivery's first read asks for the marker of
// each, since the trigger, which says the mode, is read with them.
func candidateKeys(triggerID string, headers map[string]string, body []byte) []string {
	var keys []string
	for _, m := range modes {
		if d, err := webhook.DeliveryOf(m, headers, body); err == nil && d.Key != "" {
			keys = append(keys, d.OperationKey(triggerID))
		}
	}
	return keys
}

// inClear are a trigger's secrets in clear: the current one, and the
// previous one while it is valid ("" otherwise).
type inClear struct {
	current, previous string
	validUntil        time.Time
}

// secretsOf opens or derives the trigger's secrets: a previous one only
// while it is valid at now.
func (s *Service) secretsOf(ctx context.Context, tr *trigger.Trigger, now time.Time) (inClear, error) {
	w := tr.Webhook
	var c inClear
	var err error
	if c.current, err = s.secret(ctx, tr.ID, w.Secret); err != nil {
		return inClear{}, err
	}
	if p := w.Previous; p != nil && now.Before(p.ValidUntil) {
		if c.previous, err = s.secret(ctx, tr.ID, *p); err != nil {
			return inClear{}, err
		}
		c.validUntil = p.ValidUntil
	}
	return c, nil
}

// secret is one of a trigger's secrets in clear: an imported one opened,
// a generated one derived.
func (s *Service) secret(ctx context.Context, triggerID string, sec trigger.Secret) (string, error) {
	if sec.Sealed != nil {
		return s.Secrets.Open(ctx, triggerID, sec.Sealed)
	}
	return s.Secrets.Derive(ctx, triggerID, sec.Version)
}

// input is what the trigger's prompt renders from for the proven
// delivery d, received at the gateway's time of the request (now when the
// event has none).
func input(r *httpapi.Request, body []byte, d webhook.Delivery, c inClear, tr *trigger.Trigger, now time.Time) webhook.Input {
	ev := r.Event
	received := now.UTC()
	if ms := ev.RequestContext.TimeEpoch; ms > 0 {
		received = time.UnixMilli(ms).UTC()
	}
	return webhook.Input{
		Body: string(body), Headers: ev.Headers, Query: ev.RawQueryString,
		Method: ev.RequestContext.HTTP.Method, Path: ev.RawPath, SourceIP: ev.RequestContext.HTTP.SourceIP,
		ReceivedAt: received, Event: d.Event, Delivery: d.ID,
		Secrets: []string{c.current, c.previous}, Header: tr.Webhook.Header,
	}
}
