package hook

import (
	"context"
	"time"

	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/triggerrun"
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

// secretsOf are the trigger's secrets in clear (triggerrun.ClearSecrets):
// a previous one only while it is valid at now.
func (s *Service) secretsOf(ctx context.Context, tr *trigger.Trigger, now time.Time) (inClear, error) {
	held, err := triggerrun.ClearSecrets(ctx, s.Secrets, tr, now)
	if err != nil {
		return inClear{}, err
	}
	c := inClear{current: held[0]}
	if len(held) > 1 {
		c.previous, c.validUntil = held[1], tr.Webhook.Previous.ValidUntil
	}
	return c, nil
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
