// Package triggerapi answers the trigger routes: it creates, lists, shows,
// changes and deletes a caller's triggers, scheduled or webhook ones (a
// webhook trigger's events, header and secrets in webhook.go, its secret
// made at create and rotated), lists their runs, and starts a trigger's
// session now, through the firing's start of it. Firing them on their
// schedule is package firing's; a webhook delivery is the hook
// function's.
package triggerapi

import (
	"context"
	"encoding/json/jsontext"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/ids"
	"github.com/cloud-agent/control-plane/shared/jsonbody"
	"github.com/cloud-agent/control-plane/shared/outcome"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/start"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/triggerrun"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// Limits of the contract.
const (
	// maxPerOwner is how many triggers an owner (the org, else the user)
	// may have.
	maxPerOwner = 100
)

// Secrets makes, seals and opens webhook triggers' secrets.
type Secrets interface {
	triggerrun.Secrets
	Seal(ctx context.Context, triggerID, secret string) ([]byte, error)
}

// TriggerStore reads and writes triggers and reads their runs
// (store.Table).
type TriggerStore interface {
	CreateTrigger(ctx context.Context, tr *trigger.Trigger, limit int) error
	GetTrigger(ctx context.Context, id string) (*trigger.Trigger, error)
	ListTriggers(ctx context.Context, userID string, after *store.Position, limit int, keep func(*trigger.Trigger) bool) ([]*trigger.Trigger, bool, error)
	UpdateTrigger(ctx context.Context, seen, changed *trigger.Trigger) error
	DeleteTrigger(ctx context.Context, tr *trigger.Trigger) error
	GetEnvironment(ctx context.Context, id string) (*environment.Environment, error)
	ListRuns(ctx context.Context, triggerID string, after store.RunPosition, limit int, keep func(trigger.Run) bool, now time.Time) (*trigger.Trigger, []trigger.Run, store.RunPosition, error)
	SessionOutcomes(ctx context.Context, ids []string) (map[string]*outcome.Outcome, []error, error)
}

// Service stores triggers.
type Service struct {
	Table    TriggerStore
	Settings *settings.Settings
	// Runs starts a trigger's session now.
	Runs *triggerrun.Runner
	// Secrets makes, seals and opens webhook triggers' secrets (KMS).
	Secrets Secrets
	// Now and NewTriggerID default to the clock and trg_<uuid v4>.
	Now          func() time.Time
	NewTriggerID func() string
}

// Routes are POST and GET /v1/triggers, GET, PATCH and DELETE
// /v1/triggers/{triggerId}, GET /v1/triggers/{triggerId}/runs, POST
// /v1/triggers/{triggerId}/run and POST /v1/triggers/{triggerId}/secret.
func (s *Service) Routes() []httpapi.Route {
	return []httpapi.Route{
		{Method: http.MethodPost, Pattern: "/v1/triggers", Handle: s.create},
		{Method: http.MethodGet, Pattern: "/v1/triggers", Handle: s.list},
		{Method: http.MethodGet, Pattern: "/v1/triggers/{triggerId}", Handle: s.get},
		{Method: http.MethodPatch, Pattern: "/v1/triggers/{triggerId}", Handle: s.patch},
		{Method: http.MethodDelete, Pattern: "/v1/triggers/{triggerId}", Handle: s.delete},
		{Method: http.MethodGet, Pattern: "/v1/triggers/{triggerId}/runs", Handle: s.runs},
		{Method: http.MethodPost, Pattern: "/v1/triggers/{triggerId}/run", Handle: s.runNow},
		{Method: http.MethodPost, Pattern: "/v1/triggers/{triggerId}/secret", Handle: s.rotate},
	}
}

func bad(detail string) error { return problem.New(problem.InvalidRequest, detail) }

var errNotFound = problem.New(problem.NotFound, "There is no such trigger.")

// createRequest is a validated POST /v1/triggers body; its allocation is
// kept as sent, to be judged after the org check. Exactly one of schedule
// and webhook is set; secret is a webhook's secret to import ("": one is
// generated).
type createRequest struct {
	orgID      string
	schedule   *trigger.Schedule
	webhook    *trigger.Webhook
	secret     string
	repository session.Repository
	agent      session.Agent
	prompt     string
	allocation jsontext.Value
	active     bool
	// environmentID is the environment its sessions run in, "" for none.
	environmentID string
}

// createBody is a POST /v1/triggers body as JSON has it.
type createBody struct {
	OrgID    *string `json:"orgId"`
	Schedule *struct {
		Cron     *string `json:"cron"`
		Timezone *string `json:"timezone"`
	} `json:"schedule"`
	Webhook           *webhookBody            `json:"webhook"`
	Repository        *session.RepositoryBody `json:"repository"`
	Agent             *session.AgentBody      `json:"agent"`
	Prompt            *string                 `json:"prompt"`
	SandboxAllocation jsontext.Value          `json:"sandboxAllocation"`
	Active            *bool                   `json:"active"`
	EnvironmentID     *string                 `json:"environmentId"`
}

// parseCreate validates the body, the cron expression and the zone (400).
func parseCreate(body []byte, now time.Time) (*createRequest, error) {
	var b createBody
	if err := jsonbody.Decode(body, &b); err != nil {
		return nil, err
	}
	var m problem.Members
	r := createRequest{active: true}
	r.orgID = m.Optional("orgId", b.OrgID)
	cron, zone := r.parseMode(&m, &b)
	if m.RequiredObject("repository", b.Repository != nil) {
		r.repository = session.ParseRepository(&m, "repository", b.Repository)
	}
	if m.RequiredObject("agent", b.Agent != nil) {
		r.agent = session.ParseAgent(&m, "agent", b.Agent)
	}
	r.prompt = m.Required("prompt", b.Prompt)
	r.allocation = jsonbody.NameOrObject(&m, "sandboxAllocation", b.SandboxAllocation)
	r.environmentID = m.Optional("environmentId", b.EnvironmentID)
	if b.Active != nil {
		r.active = *b.Active
	}
	if err := m.Err(); err != nil {
		return nil, err
	}
	if r.prompt == "" {
		return nil, bad("prompt may not be empty.")
	}
	// The start route's limits and secrets rule, on what a firing will send.
	if err := (&start.Request{
		OrgID: r.orgID, Repository: r.repository, Agent: r.agent, Prompt: &r.prompt, Allocation: r.allocation, EnvironmentID: r.environmentID,
	}).Validate(); err != nil {
		return nil, err
	}
	if r.webhook != nil {
		// A webhook trigger's prompt is the template its deliveries render.
		if _, err := webhook.ParseTemplate(r.prompt); err != nil {
			return nil, err
		}
		return &r, nil
	}
	if zone == "" {
		zone = "UTC" // left out
	}
	schedule, err := trigger.ParseSchedule(cron, zone, now)
	if err != nil {
		return nil, err
	}
	r.schedule = schedule
	return &r, nil
}

// parseMode reads the body's one mode: a schedule (its cron and zone, to
// be parsed) or a webhook side; both, or neither, fails.
func (r *createRequest) parseMode(m *problem.Members, b *createBody) (cron, zone string) {
	switch {
	case b.Schedule != nil && b.Webhook != nil:
		m.Fail("schedule", "and webhook may not both be given: a trigger runs on its schedule or on deliveries")
	case b.Schedule == nil && b.Webhook == nil:
		m.Fail("schedule", "or webhook is required")
	case b.Schedule != nil:
		cron = m.Required("schedule.cron", b.Schedule.Cron)
		zone = m.Optional("schedule.timezone", b.Schedule.Timezone)
	default:
		r.webhook, r.secret = parseWebhook(m, b.Webhook)
	}
	return cron, zone
}

// create runs the checks in the contract's order: the body, the cron
// expression and the zone or the webhook side and its template (400), the
// org (403), allocation checks 1 and 3 to 6, the environment it names
// (422 environment_not_found), a webhook trigger's secret (KMS:
// generated, shown in this answer only, or imported and sealed), then the
// owner's trigger limit.
func (s *Service) create(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	now := s.now()
	req, err := parseCreate(r.Body, now)
	if err != nil {
		return httpapi.Response{}, err
	}
	if req.orgID != "" && !r.Caller.InOrg(req.orgID) {
		return httpapi.Response{}, problem.New(problem.Forbidden, "The caller is not a member of the org.")
	}
	tr := &trigger.Trigger{
		ID: s.newTriggerID(), UserID: r.Caller.UserID, OrgID: req.orgID, Active: req.active,
		Webhook: req.webhook, Repository: req.repository, Agent: req.agent, Prompt: req.prompt,
		EnvironmentID: req.environmentID, CreatedAt: now.UTC(),
	}
	if req.schedule != nil {
		tr.Cron, tr.Timezone = req.schedule.Cron(), req.schedule.Timezone()
		tr.NextRunAt = req.schedule.Next(tr.CreatedAt)
	}
	if req.allocation != nil {
		if err := s.save(ctx, tr, req.allocation); err != nil {
			return httpapi.Response{}, err
		}
	}
	if err := s.checkEnvironment(ctx, nil, tr); err != nil {
		return httpapi.Response{}, err
	}
	var shown string
	if tr.Webhook != nil {
		tr.Webhook.Secret, shown, err = s.newSecret(ctx, tr.ID, req.secret, 1, tr.CreatedAt)
		if err != nil {
			return httpapi.Response{}, err
		}
	}
	switch err := s.Table.CreateTrigger(ctx, tr, maxPerOwner); {
	case errors.Is(err, store.ErrEnvironmentGone):
		return httpapi.Response{}, environment.ErrNotFound
	case errors.Is(err, store.ErrTriggerLimit):
		return httpapi.Response{}, problem.New(problem.TriggerLimitReached, "The owner already has 100 triggers. Delete one to make room.")
	case err != nil:
		return httpapi.Response{}, err
	}
	v := viewOf(tr)
	if v.Webhook != nil {
		v.Webhook.Secret = shown
	}
	return httpapi.Response{
		Status: http.StatusCreated, Body: v,
		Headers: map[string]string{"Location": "/v1/triggers/" + tr.ID},
	}, nil
}

// Page is a page of triggers.
type Page struct {
	Items      []View  `json:"items"`
	NextCursor *string `json:"nextCursor"`
}

// list shows the caller's own triggers, newest first, a page at a time.
func (s *Service) list(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	limit, err := r.PageLimit()
	if err != nil {
		return httpapi.Response{}, err
	}
	after, err := r.After()
	if err != nil {
		return httpapi.Response{}, err
	}
	owned := func(tr *trigger.Trigger) bool { return r.Caller.Owns(tr.UserID, tr.OrgID) }
	triggers, more, err := s.Table.ListTriggers(ctx, r.Caller.UserID, (*store.Position)(after), limit, owned)
	if err != nil {
		return httpapi.Response{}, err
	}
	items, err := s.views(ctx, triggers...)
	if err != nil {
		return httpapi.Response{}, err
	}
	page := Page{Items: items}
	if more {
		last := triggers[len(triggers)-1]
		page.NextCursor = httpapi.Position{ID: last.ID, CreatedAt: last.CreatedAt}.Cursor()
	}
	return httpapi.Response{Status: http.StatusOK, Body: page}, nil
}

// owned reads the path's trigger; one the caller does not own is, to the
// caller, one that does not exist. A stored trigger that does not decode is
// its owner's to delete, and an internal error to read.
func (s *Service) owned(ctx context.Context, r *httpapi.Request) (tr *trigger.Trigger, invalid bool, err error) {
	id := r.Params["triggerId"]
	if !ids.IsPathID(id) {
		return nil, false, bad("The trigger id is not valid.")
	}
	tr, err = s.Table.GetTrigger(ctx, id)
	var broken *store.InvalidTriggerError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, false, errNotFound
	case errors.As(err, &broken):
		tr, invalid, err = broken.Trigger(), true, problem.Wrap(problem.InternalError, "The stored trigger is invalid.", err)
	case err != nil:
		return nil, false, err
	}
	if !r.Caller.Owns(tr.UserID, tr.OrgID) {
		return nil, false, errNotFound
	}
	return tr, invalid, err
}

func (s *Service) get(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	tr, _, err := s.owned(ctx, r)
	if err != nil {
		return httpapi.Response{}, err
	}
	return s.answer(ctx, tr)
}

func (s *Service) delete(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	tr, invalid, err := s.owned(ctx, r)
	if err != nil && !invalid {
		return httpapi.Response{}, err
	}
	switch err := s.Table.DeleteTrigger(ctx, tr); {
	case errors.Is(err, store.ErrNotFound):
		return httpapi.Response{}, errNotFound
	case err != nil:
		return httpapi.Response{}, err
	}
	return httpapi.Response{Status: http.StatusNoContent}, nil
}

// checkEnvironment judges the environment that next names, when it names
// one that seen (nil at a create) did not: one the trigger's user does not
// own, or that does not exist, is environment_not_found. The write that
// follows counts the trigger on it, on the condition that it still
// exists.
func (s *Service) checkEnvironment(ctx context.Context, seen, next *trigger.Trigger) error {
	if next.EnvironmentID == "" || seen != nil && seen.EnvironmentID == next.EnvironmentID {
		return nil
	}
	e, err := s.Table.GetEnvironment(ctx, next.EnvironmentID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return environment.ErrNotFound
	case err != nil:
		return err
	case !e.OwnedBy(next.UserID, next.OrgID):
		return environment.ErrNotFound
	}
	return nil
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) newTriggerID() string {
	if s.NewTriggerID != nil {
		return s.NewTriggerID()
	}
	return "trg_" + uuid.NewString()
}
