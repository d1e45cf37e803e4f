// Package environmentapi answers the environment routes (contract v7): it
// creates, lists, shows, changes and deletes a caller's environments,
// seals their secret variables through KMS before anything is written,
// and keeps each owner's one default. What an environment may hold is
// package environment's; using one at a start is the start's.
package environmentapi

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/ids"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/store"
)

// Sealer encrypts a secret variable's value (secrets.Variables).
type Sealer interface {
	Seal(ctx context.Context, environmentID, name, value string) ([]byte, error)
}

// EnvironmentStore reads and writes environments (store.Table).
type EnvironmentStore interface {
	GetEnvironment(ctx context.Context, id string) (*environment.Environment, error)
	DefaultEnvironment(ctx context.Context, userID, orgID string) (string, error)
	ListEnvironments(ctx context.Context, userID, orgID string, after *store.Position, limit int) ([]*environment.Environment, bool, error)
	WriteEnvironment(ctx context.Context, c store.EnvironmentChange) error
}

// Service stores environments.
type Service struct {
	Table    EnvironmentStore
	Settings *settings.Settings
	Secrets  Sealer
	// Now and NewID default to the clock and env_<uuid v4>.
	Now   func() time.Time
	NewID func() string
}

// Routes are POST and GET /v1/environments, and GET, PATCH and DELETE
// /v1/environments/{environmentId}.
func (s *Service) Routes() []httpapi.Route {
	return []httpapi.Route{
		{Method: http.MethodPost, Pattern: "/v1/environments", Handle: s.create},
		{Method: http.MethodGet, Pattern: "/v1/environments", Handle: s.list},
		{Method: http.MethodGet, Pattern: "/v1/environments/{environmentId}", Handle: s.get},
		{Method: http.MethodPatch, Pattern: "/v1/environments/{environmentId}", Handle: s.patch},
		{Method: http.MethodDelete, Pattern: "/v1/environments/{environmentId}", Handle: s.delete},
	}
}

// Writes counts each environment written, by Change: created, changed
// (its content, its default, or both) or deleted.
const (
	Writes    = "EnvironmentWrites"
	DimChange = "Change"
)

var (
	errNotFound  = problem.New(problem.NotFound, "There is no such environment.")
	errForbidden = problem.New(problem.Forbidden, "The caller is not a member of the org.")
	errBusy      = problem.New(problem.ServiceUnavailable, "The environment kept changing. Try again shortly.")
)

// refusals are the contract's answers to a write's refusals.
var refusals = map[error]error{
	store.ErrEnvironmentNameTaken: problem.New(problem.EnvironmentNameTaken, "The owner already has an environment of this name. Choose another name."),
	store.ErrEnvironmentLimit: problem.New(problem.EnvironmentLimitReached,
		"The owner already has 100 environments. Delete one to make room."),
	store.ErrEnvironmentInUse: problem.New(problem.EnvironmentInUse, "A trigger runs in this environment. Change or delete the triggers that name it first."),
	store.ErrNotFound:         errNotFound,
}

// write writes the change, and counts it; a refusal is its answer.
func (s *Service) write(ctx context.Context, c store.EnvironmentChange, change string) error {
	err := s.Table.WriteEnvironment(ctx, c)
	for cause, answer := range refusals {
		if errors.Is(err, cause) {
			return answer
		}
	}
	if err == nil {
		invocation.Add(ctx, invocation.Count(Writes, 1, invocation.Dimension{Name: DimChange, Value: change}))
	}
	return err
}

// create runs the checks in the contract's order: the body (400), the org
// (403), allocation checks 1 and 3 to 6; then the secrets are sealed (KMS
// unreachable: 503, nothing written), and the write judges the name
// (409) and the owner's limit (422).
func (s *Service) create(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	c, err := environment.ParseCreate(r.Body)
	if err != nil {
		return httpapi.Response{}, err
	}
	if c.OrgID != "" && !r.Caller.InOrg(c.OrgID) {
		return httpapi.Response{}, errForbidden
	}
	e := &c.Environment
	now := s.now().UTC()
	e.ID, e.OwnerUserID, e.CreatedAt, e.UpdatedAt, e.Version = s.newID(), r.Caller.UserID, now, now.Truncate(time.Second), 1
	if c.Allocation != nil {
		if e.SavedAllocation, e.SavedRequest, err = s.Settings.Saved(ctx, c.Allocation, e.Owner()); err != nil {
			return httpapi.Response{}, err
		}
	}
	if err := s.seal(ctx, e); err != nil {
		return httpapi.Response{}, err
	}
	// A conflict with another transaction (on the owner's count or
	// default) is tried again.
	if _, err := commit.Again(ctx, store.ErrEnvironmentMoved, errBusy, func() (struct{}, error) {
		return struct{}{}, s.write(ctx, store.EnvironmentChange{Next: e, IsDefault: c.Default, Limit: environment.MaxPerOwner}, "created")
	}); err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.Response{
		Status: http.StatusCreated, Body: viewOf(e, c.Default),
		Headers: map[string]string{"Location": "/v1/environments/" + e.ID},
	}, nil
}

// seal encrypts e's secret values not yet sealed, in place, and holds
// the result to the stored size again (a ciphertext is longer than its
// value).
func (s *Service) seal(ctx context.Context, e *environment.Environment) error {
	for _, name := range slices.Sorted(maps.Keys(e.Variables)) {
		v := e.Variables[name]
		if !v.Secret || v.Sealed != nil {
			continue
		}
		sealed, err := s.Secrets.Seal(ctx, e.ID, name, v.Value)
		if err != nil {
			return err
		}
		e.Variables[name] = environment.Variable{Secret: true, Sealed: sealed}
	}
	return e.Check()
}

// Page is a page of environments.
type Page struct {
	Items      []View  `json:"items"`
	NextCursor *string `json:"nextCursor"`
}

// list shows the caller's own environments, or with orgId an org's of
// theirs, newest first, a page at a time.
func (s *Service) list(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	limit, err := r.PageLimit()
	if err != nil {
		return httpapi.Response{}, err
	}
	after, err := r.After()
	if err != nil {
		return httpapi.Response{}, err
	}
	orgID, byOrg := r.Query("orgId")
	switch {
	case byOrg && !ids.IsID(orgID):
		return httpapi.Response{}, problem.New(problem.InvalidRequest, "orgId is not a valid id.")
	case byOrg && !r.Caller.InOrg(orgID):
		return httpapi.Response{}, errForbidden
	}
	envs, more, err := s.Table.ListEnvironments(ctx, r.Caller.UserID, orgID, (*store.Position)(after), limit)
	if err != nil {
		return httpapi.Response{}, err
	}
	def, err := s.Table.DefaultEnvironment(ctx, r.Caller.UserID, orgID)
	if err != nil {
		return httpapi.Response{}, err
	}
	page := Page{Items: make([]View, len(envs))}
	for i, e := range envs {
		page.Items[i] = viewOf(e, e.ID == def)
	}
	if more {
		last := envs[len(envs)-1]
		page.NextCursor = httpapi.Position{ID: last.ID, CreatedAt: last.CreatedAt}.Cursor()
	}
	return httpapi.Response{Status: http.StatusOK, Body: page}, nil
}

// owned reads the path's environment and whether it is its owner's
// default; one the caller does not own is, to the caller, one that does
// not exist. An org's environment is owned by every member of the org.
func (s *Service) owned(ctx context.Context, r *httpapi.Request) (*environment.Environment, bool, error) {
	id := r.Params["environmentId"]
	if !ids.IsPathID(id) {
		return nil, false, problem.New(problem.InvalidRequest, "The environment id is not valid.")
	}
	e, err := s.Table.GetEnvironment(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, false, errNotFound
	case err != nil:
		return nil, false, err
	case e.OrgID != "" && !r.Caller.InOrg(e.OrgID), e.OrgID == "" && e.OwnerUserID != r.Caller.UserID:
		return nil, false, errNotFound
	}
	def, err := s.Table.DefaultEnvironment(ctx, e.OwnerUserID, e.OrgID)
	return e, def == e.ID, err
}

func (s *Service) get(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	e, isDefault, err := s.owned(ctx, r)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.Response{Status: http.StatusOK, Body: viewOf(e, isDefault)}, nil
}

// patch changes one of the caller's environments: the merge patch applied
// to the environment as read, held to a create's rules, its new secrets
// sealed, written on the condition that the environment and its owner's
// default are still as read; when either moved, judged again on what is
// there now, at most commit.Tries times, then 503. A patch that changes
// nothing writes nothing.
func (s *Service) patch(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	if !ids.IsPathID(r.Params["environmentId"]) {
		return httpapi.Response{}, problem.New(problem.InvalidRequest, "The environment id is not valid.")
	}
	if err := r.MergePatchType(); err != nil {
		return httpapi.Response{}, err
	}
	u, err := environment.ParsePatch(r.Body)
	if err != nil {
		return httpapi.Response{}, err
	}
	return commit.Again(ctx, store.ErrEnvironmentMoved, errBusy, func() (httpapi.Response, error) {
		seen, wasDefault, err := s.owned(ctx, r)
		if err != nil {
			return httpapi.Response{}, err
		}
		next, err := u.Apply(seen)
		if err != nil {
			return httpapi.Response{}, err
		}
		if u.Allocation != nil {
			if next.SavedAllocation, next.SavedRequest, err = s.Settings.Saved(ctx, u.Allocation, seen.Owner()); err != nil {
				return httpapi.Response{}, err
			}
		}
		if err := s.seal(ctx, next); err != nil {
			return httpapi.Response{}, err
		}
		isDefault := wasDefault
		if u.Default != nil {
			isDefault = *u.Default
		}
		if environment.Changed(seen, next) {
			next.Version, next.UpdatedAt = seen.Version+1, s.now().UTC().Truncate(time.Second)
		}
		c := store.EnvironmentChange{Seen: seen, Next: next, WasDefault: wasDefault, IsDefault: isDefault}
		if next.Version != seen.Version || isDefault != wasDefault {
			if err := s.write(ctx, c, "changed"); err != nil {
				return httpapi.Response{}, err
			}
		}
		return httpapi.Response{Status: http.StatusOK, Body: viewOf(next, isDefault)}, nil
	})
}

// delete deletes one of the caller's environments, with its owner's
// default pointer when it is the default: 409 while triggers name it.
func (s *Service) delete(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	return commit.Again(ctx, store.ErrEnvironmentMoved, errBusy, func() (httpapi.Response, error) {
		seen, wasDefault, err := s.owned(ctx, r)
		if err != nil {
			return httpapi.Response{}, err
		}
		if err := s.write(ctx, store.EnvironmentChange{Seen: seen, WasDefault: wasDefault}, "deleted"); err != nil {
			return httpapi.Response{}, err
		}
		return httpapi.Response{Status: http.StatusNoContent}, nil
	})
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) newID() string {
	if s.NewID != nil {
		return s.NewID()
	}
	return "env_" + uuid.NewString()
}
