// Package startapi is POST /v1/sessions: the request read, the caller's
// org and the allocation checked, the start run by the executor and
// its answer. The start itself knows nothing of HTTP (shared/start).
package startapi

import (
	"context"
	"net/http"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/start"
)

// Route is POST /v1/sessions over the executor s.
func Route(s *commit.Executor) httpapi.Route {
	return httpapi.Route{Method: http.MethodPost, Pattern: "/v1/sessions", Handle: route{s}.handle}
}

type route struct{ s *commit.Executor }

// handle runs the checks in the contract's order: the body (400), the org
// (403), allocation checks 1 and 2, then the start, whose ledger comes
// before the shared kind and checks 3 to 6.
func (rt route) handle(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	var header *string
	if key, ok := r.Header("Idempotency-Key"); ok {
		header = &key
	}
	req, err := start.ParseRequest(r.Body, header)
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
	out, err := rt.s.Start(ctx, start.Command{UserID: r.Caller.UserID, BotID: r.Caller.BotID, Request: req, Allocation: a})
	switch {
	case err != nil:
		return httpapi.Response{}, err
	case out.Kind == ledger.Refused:
		return httpapi.Response{}, out.Refusal
	}
	replayed, status := out.Kind == ledger.Replayed, http.StatusCreated
	if replayed {
		status = http.StatusOK
	}
	start.Count(ctx, out)
	return httpapi.Response{
		Status:  status,
		Body:    start.ResponseOf(out.Record, replayed),
		Headers: map[string]string{"Location": "/v1/sessions/" + out.Record.SessionID + "/allocation"},
	}, nil
}
