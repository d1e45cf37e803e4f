package hook

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/store"
)

// Deliveries counts each delivery the handler judged by its Outcome (404
// and 405, the router's, are none).
const (
	Deliveries = "Deliveries"
	DimOutcome = "Outcome"
)

// The outcomes of a delivery.
const (
	started      = "started"
	redelivered  = "redelivered"
	unauthorized = "unauthorized"
	paused       = "paused"
	ignored      = "ignored"
	ping         = "ping"
	limited      = "limited"
	refused      = "refused"
	tooLarge     = "too_large"
	invalid      = "invalid"
	unavailable  = "unavailable"
)

// outcome is what a delivery's line says of it: the outcome, and what
// the handler learned on the way (never the body, a header's value but
// the delivery id and the event, or a secret).
type outcome struct {
	name string
	// triggerID is the path's, once it is well formed; verify the proof
	// checked; reason a 401's; delivery and event the proven delivery's.
	triggerID, verify, reason, delivery, event string
}

// is sets the outcome of an answer the error gives.
func (o *outcome) is(name string) httpapi.Response {
	o.name = name
	return httpapi.Response{}
}

// answer is a 2xx answer without a session.
func (o *outcome) answer(name string, status int, body any) httpapi.Response {
	o.name = name
	return httpapi.Response{Status: status, Body: body}
}

// failed sets the outcome of an error met on the way: refused for a 4xx,
// unavailable for a 503, none for an internal error (Faults counts it).
func (o *outcome) failed(err error) httpapi.Response {
	switch status := problem.CodeOf(err).Status(); {
	case status == http.StatusServiceUnavailable:
		o.name = unavailable
	case status < 500:
		o.name = refused
	}
	return httpapi.Response{}
}

// startedBody is the answer of a delivery that obtained a session: 201 for a
// new one, with the session's Location, 200 for a redelivery's.
type startedBody struct {
	Delivery  *string `json:"delivery"`
	SessionID string  `json:"sessionId"`
	Replayed  bool    `json:"replayed"`
}

func (o *outcome) session(id string, replayed bool) httpapi.Response {
	name, status := started, http.StatusCreated
	if replayed {
		name, status = redelivered, http.StatusOK
	}
	var delivery *string
	if o.delivery != "" {
		delivery = &o.delivery
	}
	r := o.answer(name, status, startedBody{Delivery: delivery, SessionID: id, Replayed: replayed})
	if !replayed {
		r.Headers = map[string]string{"Location": "/v1/sessions/" + id + "/allocation"}
	}
	return r
}

// fromMarker answers a redelivery from the marker of its key: the
// session, or the refusal the first start met.
func (o *outcome) fromMarker(m store.Marker) (httpapi.Response, error) {
	if m.SessionID != "" {
		return o.session(m.SessionID, true), nil
	}
	o.name = redelivered
	return httpapi.Response{}, problem.New(problem.Code(m.Error), m.Detail)
}

// note puts the outcome on the line: its members, and Deliveries by
// Outcome.
func (o *outcome) note(ctx context.Context) {
	var attrs []slog.Attr
	for _, a := range []struct{ name, v string }{
		{"triggerId", o.triggerID}, {"delivery", o.delivery}, {"event", o.event},
		{"verify", o.verify}, {"reason", o.reason}, {"outcome", o.name},
	} {
		if a.v != "" {
			attrs = append(attrs, slog.String(a.name, a.v))
		}
	}
	invocation.Note(ctx, attrs...)
	if o.name != "" {
		invocation.Add(ctx, invocation.Count(Deliveries, 1, invocation.Dimension{Name: DimOutcome, Value: o.name}))
	}
}
