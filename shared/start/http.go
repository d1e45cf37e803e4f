package start

import (
	"context"
	"net/http"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
)

// Response is the body of a start: the session, whether it was replayed,
// and its sandbox as the lookup shows it.
type Response struct {
	SessionID string              `json:"sessionId"`
	Replayed  bool                `json:"replayed"`
	Sandbox   session.SandboxView `json:"sandbox"`
}

// The metrics of a start that obtained its session (POST /v1/sessions, a
// trigger's start now), by the dimensions Provider and Allocation of the
// session's sandbox.
const (
	// Starts counts a new session (201).
	Starts = "Starts"
	// Replays counts a replayed one (200).
	Replays = "Replays"
	// DimProvider is the sandbox's provider.
	DimProvider = "Provider"
	// DimAllocation is its allocation: the name, vercel/byoc/<instanceType>
	// for a byoc object, NoAllocation when it has none (code-review).
	DimAllocation = "Allocation"
	// NoAllocation is the Allocation of a session that has none.
	NoAllocation = "none"
)

// Route is POST /v1/sessions over the service.
func Route(s *Service) httpapi.Route {
	return httpapi.Route{Method: http.MethodPost, Pattern: "/v1/sessions", Handle: s.handle}
}

// handle runs the checks in the contract's order: the body (400), the org
// (403), allocation checks 1 and 2, then the start, whose ledger comes
// before the shared kind and checks 3 to 6.
func (s *Service) handle(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var header *string
	if key, ok := r.Header("Idempotency-Key"); ok {
		header = &key
	}
	req, err := ParseRequest(r.Body, header)
	if err != nil {
		return httpapi.Response{}, err
	}
	if req.OrgID != "" && !r.Caller.InOrg(req.OrgID) {
		return httpapi.Response{}, problem.New(problem.Forbidden, "The caller is not a member of the org.")
	}
	var a allocation.Allocation
	if req.Allocation != nil {
		if a, err = allocation.Parse(req.Allocation); err != nil {
			return httpapi.Response{}, err
		}
	}
	if err := allocation.CheckRouting(a, req.Kind); err != nil {
		return httpapi.Response{}, err
	}
	res, err := s.Start(ctx, Command{UserID: r.Caller.UserID, BotID: r.Caller.BotID, Request: req, Allocation: a})
	if err != nil {
		return httpapi.Response{}, err
	}
	status := http.StatusCreated
	if res.Replayed {
		status = http.StatusOK
	}
	Count(ctx, res)
	return httpapi.Response{
		Status:  status,
		Body:    Response{res.Record.SessionID, res.Replayed, res.Record.SandboxView()},
		Headers: map[string]string{"Location": "/v1/sessions/" + res.Record.SessionID + "/allocation"},
	}, nil
}

// Count counts the session a start obtained: Starts for a new one,
// Replays for a replayed one, by its sandbox's provider and allocation.
func Count(ctx context.Context, res *Result) {
	metric := Starts
	if res.Replayed {
		metric = Replays
	}
	invocation.Add(ctx, invocation.Count(metric, 1, sandboxDimensions(res.Record)...))
}

// sandboxDimensions are the Provider and Allocation of a session's sandbox.
func sandboxDimensions(rec *session.Record) []invocation.Dimension {
	a := NoAllocation
	if alloc := rec.Allocation(); !alloc.IsZero() {
		a = alloc.String()
	}
	return []invocation.Dimension{{Name: DimProvider, Value: string(rec.Sandbox.Provider)}, {Name: DimAllocation, Value: a}}
}
