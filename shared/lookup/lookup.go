// Package lookup answers the allocation lookup routes: a stored session's
// sandbox, current or legacy, and the allocations a caller may select.
package lookup

import (
	"context"
	"errors"
	"net/http"

	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/ids"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/store"
)

// SessionReader reads a session (store.Table).
type SessionReader interface {
	GetSession(ctx context.Context, sessionID string) (*session.Record, error)
}

// Service reads sessions and settings.
type Service struct {
	Table    SessionReader
	Settings *settings.Settings
}

// Routes are GET /v1/sessions/{sessionId}/allocation and GET
// /v1/allocations.
func (s *Service) Routes() []httpapi.Route {
	return []httpapi.Route{
		{Method: http.MethodGet, Pattern: "/v1/sessions/{sessionId}/allocation", Handle: s.session},
		{Method: http.MethodGet, Pattern: "/v1/allocations", Handle: s.allocations},
	}
}

var errNotFound = problem.New(problem.NotFound, "There is no such session.")

// session shows a stored session to its owner or an admin; anyone else, and
// an unknown id, is 404. A record that does not decode is
// session_record_invalid to an admin, and to its owner when the owner can
// still be read.
func (s *Service) session(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	id := r.Params["sessionId"]
	if !ids.IsPathID(id) {
		return httpapi.Response{}, problem.New(problem.InvalidRequest, "The session id is not valid.")
	}
	policy, err := s.Settings.Policy(ctx)
	if err != nil {
		return httpapi.Response{}, err
	}
	rec, err := s.Table.GetSession(ctx, id)
	var invalid *store.InvalidSessionError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return httpapi.Response{}, errNotFound
	case errors.As(err, &invalid):
		if r.Caller.Admin || invalid.UserID != "" && r.Caller.Owns(invalid.UserID, invalid.OrgID) {
			return httpapi.Response{}, problem.Wrap(problem.SessionRecordInvalid, "The stored session record is invalid.", err)
		}
		return httpapi.Response{}, errNotFound
	case err != nil:
		return httpapi.Response{}, err
	}
	if !r.Caller.Admin && !r.Caller.Owns(rec.UserID, rec.OrgID) {
		return httpapi.Response{}, errNotFound
	}
	v := rec.View(policy)
	if r.Caller.Admin {
		v = v.ForAdmin()
	}
	return httpapi.Response{Status: http.StatusOK, Body: v}, nil
}

// allocations lists what the caller, or the org it names, may select.
func (s *Service) allocations(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	owner := r.Caller.UserID
	if org, ok := r.Query("orgId"); ok {
		if !ids.IsID(org) {
			return httpapi.Response{}, problem.New(problem.InvalidRequest, "orgId is not a valid org id.")
		}
		if !r.Caller.InOrg(org) {
			return httpapi.Response{}, problem.New(problem.Forbidden, "The caller is not a member of the org.")
		}
		owner = org
	}
	policy, err := s.Settings.Policy(ctx)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.Response{Status: http.StatusOK, Body: policy.OptionsFor(owner)}, nil
}
