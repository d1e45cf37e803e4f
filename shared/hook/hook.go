// Package hook is the /v1/hooks routes: a webhook delivery to a trigger,
// answered in the contract's order of checks, with no caller (the
// delivery proves itself with the trigger's secret). It reads what the
// delivery is judged on in one request (store.Table.ReadDelivery),
// proves it (webhook.Verify, with the secrets of package secrets),
// answers a ping, an event not listed, a redelivery, a paused trigger and
// the minute's limit, and leaves the start to triggerrun. The line of
// each delivery names its outcome (Deliveries by Outcome).
package hook

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/start"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/triggerrun"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// DeliveryStore reads what a delivery is judged on in one request
// (store.Table).
type DeliveryStore interface {
	ReadDelivery(ctx context.Context, id string, keys []string, now time.Time) (*store.DeliveryRead, error)
}

// Service answers webhook deliveries.
type Service struct {
	Table    DeliveryStore
	Settings *settings.Settings
	Secrets  triggerrun.Secrets
	Runs     *triggerrun.Runner
	// Now defaults to the clock.
	Now func() time.Time
}

// Routes are the hook function's routes: POST /v1/hooks/{triggerId},
// public. (Its template has ANY /v1/hooks/{triggerId} and ANY
// /v1/hooks/{proxy+}: another method is 405, a deeper path 404.)
func (s *Service) Routes() []httpapi.Route {
	return []httpapi.Route{{Method: "POST", Pattern: "/v1/hooks/{triggerId}", Handle: s.deliver, Public: true}}
}

var (
	errUnauthorized = problem.New(problem.Unauthorized, "The delivery is not proven for this trigger.")
	errMediaType    = problem.New(problem.UnsupportedMediaType, "Webhook deliveries of this content type are not accepted.")
	errBusy         = problem.New(problem.ServiceUnavailable, "The trigger is busy. Try again shortly.")
)

// deliver answers a delivery and notes its outcome on the line.
func (s *Service) deliver(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	o := &outcome{}
	resp, err := s.judge(ctx, r, o)
	o.note(ctx)
	return resp, err
}

// judge is the contract's order of checks up to the proof, then the
// rounds of reading and judging the delivery.
func (s *Service) judge(ctx context.Context, r *httpapi.Request, o *outcome) (httpapi.Response, error) {
	ev := r.Event
	switch {
	case len(ev.Body) > httpapi.MaxBody: // as it arrived, before base64 decoding
		// Base64 and a form's percent decoding only shrink a body: the
		// payload of a form body that passes is within the limit too.
		return o.is(tooLarge), httpapi.ErrTooLarge
	case refusedType(ev.Headers["content-type"]):
		return o.is(invalid), errMediaType
	}
	body, err := httpapi.DecodeBody(ev)
	if err != nil {
		return o.is(invalid), err
	}
	id := r.Params["triggerId"]
	if !validTriggerID(id) {
		o.reason = "malformed_trigger_id"
		return o.is(unauthorized), errUnauthorized
	}
	o.triggerID = id
	// Read and judged again while its trigger moved under it (or a
	// write met another).
	resp, err := commit.Again(ctx, store.ErrTriggerMoved, errBusy, func() (httpapi.Response, error) { return s.round(ctx, r, body, o) })
	if errors.Is(err, errBusy) {
		return o.is(unavailable), err
	}
	return resp, err
}

// round reads the delivery's trigger, marker and counter, proves the
// delivery and answers it: store.ErrTriggerMoved when the trigger moved
// (or a write met another) before its start was written.
func (s *Service) round(ctx context.Context, r *httpapi.Request, body []byte, o *outcome) (httpapi.Response, error) {
	now := s.now()
	headers := r.Event.Headers
	read, err := s.Table.ReadDelivery(ctx, o.triggerID, candidateKeys(o.triggerID, headers, body), now)
	if err != nil {
		return o.failed(err), err
	}
	tr := read.Trigger
	if tr == nil || tr.Webhook == nil { // unknown, deleted or scheduled: no KMS call
		o.reason = "unknown_trigger"
		return o.is(unauthorized), errUnauthorized
	}
	sec, err := s.secretsOf(ctx, tr, now)
	if err != nil {
		return o.failed(err), err
	}
	w := tr.Webhook
	o.verify = string(w.Verify)
	proof := webhook.Verify(webhook.VerifyRequest{Mode: w.Verify, Secret: sec.current, Previous: sec.previous,
		PreviousValidUntil: sec.validUntil, TokenHeader: w.Header, Body: body, Headers: headers, Now: now})
	if !proof.Proven() {
		o.reason = string(proof)
		return o.is(unauthorized), errUnauthorized
	}
	if err := webhook.CheckHeaders(w.Verify, w.Header, headers); err != nil {
		return o.is(invalid), err
	}
	d, err := webhook.DeliveryOf(w.Verify, headers, body)
	if err != nil {
		return o.is(invalid), err
	}
	// Nothing recorded or logged of the delivery holds a secret, whatever
	// header the trigger's own header is (its key is kept whole).
	d.Event, d.ID = webhook.Redact(d.Event, sec.current, sec.previous), webhook.Redact(d.ID, sec.current, sec.previous)
	o.delivery, o.event = d.ID, d.Event
	switch m, redelivered := read.Markers[d.OperationKey(tr.ID)]; {
	case d.Ping():
		return o.answer(ping, http.StatusOK, map[string]bool{"ping": true}), nil
	case !d.Listed(w.Events):
		return o.answer(ignored, http.StatusAccepted, map[string]bool{"ignored": true}), nil
	case redelivered:
		return s.redelivered(ctx, tr, d, m, o)
	case !tr.Active:
		return o.answer(paused, http.StatusAccepted, map[string]bool{"paused": true}), nil
	}
	return s.start(ctx, tr, read, triggerrun.Delivery{Delivery: d, Input: input(r, body, d, sec, tr, now)}, o)
}

// start judges the minute's limit and starts the delivery's session.
func (s *Service) start(ctx context.Context, tr *trigger.Trigger, read *store.DeliveryRead, d triggerrun.Delivery, o *outcome) (httpapi.Response, error) {
	limit, err := s.Settings.DeliveriesPerMinute(ctx)
	if err != nil {
		return o.failed(err), err
	}
	now := s.now()
	if read.Started >= limit {
		return o.is(limited), rateLimited(now)
	}
	policy, err := s.Settings.Policy(ctx)
	if err != nil {
		return o.failed(err), err
	}
	d.Limit, d.Now = limit, now
	started, err := s.Runs.StartDelivery(ctx, tr, policy, d)
	switch {
	case errors.Is(err, store.ErrRateLimited):
		return o.is(limited), rateLimited(now)
	case errors.Is(err, store.ErrTriggerMoved):
		return httpapi.Response{}, err
	case err != nil:
		return o.failed(err), err
	case started.Delivered != nil: // a racing start of the key recorded first
		return s.redelivered(ctx, tr, d.Delivery, *started.Delivered, o)
	}
	start.Count(ctx, started.Outcome) // as every start counts: by provider and allocation
	return o.session(started.Record.SessionID, started.Kind == ledger.Replayed), nil
}

// redelivered answers a delivery whose key's marker m stands as ledger
// rules 1 to 3 and 7 judge the key's live row, as they do for the start
// route and a trigger's run (triggerrun.Runner.Redelivered): a retired
// allocation or runtime is never replayed. Only when no live row stands
// does the marker answer: its session, or the refusal the first start
// met.
func (s *Service) redelivered(ctx context.Context, tr *trigger.Trigger, d webhook.Delivery, m store.Marker, o *outcome) (httpapi.Response, error) {
	policy, err := s.Settings.Policy(ctx)
	if err != nil {
		return o.failed(err), err
	}
	out, err := s.Runs.Redelivered(ctx, tr, policy, d)
	switch {
	case err != nil:
		return o.failed(err), err
	case out.Kind == ledger.Refused: // the row's refusal
		o.name = redelivered
		return httpapi.Response{}, out.Refusal
	case out.Kind == ledger.Replayed:
		return o.session(out.Record.SessionID, true), nil
	}
	return o.fromMarker(m)
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// validTriggerID reports whether id is a trigger's: trg_ and a lowercase
// UUID.
func validTriggerID(id string) bool {
	rest, ok := strings.CutPrefix(id, "trg_")
	if !ok || len(rest) != 36 || strings.ToLower(rest) != rest {
		return false
	}
	_, err := uuid.Parse(rest)
	return err == nil
}

// refusedType reports whether a Content-Type is one the seed system
// refused too: multipart, images, audio, video and a few binary types. A
// header sent twice comes joined with a comma, and is refused when either
// type is.
func refusedType(contentType string) bool {
	for part := range strings.SplitSeq(contentType, ",") {
		mt, _, _ := strings.Cut(part, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
		for _, p := range []string{"multipart/", "image/", "audio/", "video/"} {
			if strings.HasPrefix(mt, p) {
				return true
			}
		}
		if mt == "application/octet-stream" || mt == "application/pdf" || mt == "application/zip" {
			return true
		}
	}
	return false
}

// rateLimited is the 429 of a trigger over the minute's limit, with
// Retry-After the seconds to the next minute.
func rateLimited(now time.Time) error {
	next := now.Truncate(time.Minute).Add(time.Minute)
	return &problem.Error{Code: problem.RateLimited, RetryAfter: next.Sub(now),
		Detail: "The trigger has had its most deliveries this minute. Try again in the next minute."}
}

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
