package session

import (
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/outcome"
)

// View is a session as the allocation lookup shows it.
type View struct {
	SessionID string             `json:"sessionId"`
	Owner     OwnerView          `json:"owner"`
	CreatedAt *string            `json:"createdAt"`
	Sandbox   SandboxView        `json:"sandbox"`
	Runtime   allocation.Runtime `json:"runtime"`
	Record    RecordInfo         `json:"record"`
	// Environment is the environment the session was started in, null
	// for none (every legacy record).
	Environment *EnvironmentRef `json:"environment"`
	// Outcome is how the session's run ended, null while it runs (and
	// for every session started before contract v7).
	Outcome *OutcomeView `json:"outcome"`
}

// OutcomeView is an outcome as the API answers it.
type OutcomeView struct {
	Status     string     `json:"status"`
	Error      *ErrorView `json:"error"`
	EndedAt    string     `json:"endedAt"`
	ReportedAt string     `json:"reportedAt"`
}

// ErrorView is an outcome's error; its message is null for an admin, who
// sees that a run failed and why in a code, never the runner's words.
type ErrorView struct {
	Code    string  `json:"code"`
	Message *string `json:"message"`
}

// OutcomeOf is o as answered, nil for none.
func OutcomeOf(o *outcome.Outcome) *OutcomeView {
	if o == nil {
		return nil
	}
	v := &OutcomeView{Status: o.Status, EndedAt: o.EndedAt.UTC().Format(TimeFormat), ReportedAt: o.ReportedAt.UTC().Format(TimeFormat)}
	if e := o.Error; e != nil {
		v.Error = &ErrorView{Code: e.Code, Message: &e.Message}
	}
	return v
}

// ForAdmin is the view as an admin's lookup answers it: an outcome's
// error without its message.
func (v View) ForAdmin() View {
	if o := v.Outcome; o != nil && o.Error != nil {
		e, out := *o.Error, *o
		e.Message, out.Error = nil, &e
		v.Outcome = &out
	}
	return v
}

// OwnerView is a session's owner; a missing org or bot is null.
type OwnerView struct {
	UserID string  `json:"userId"`
	OrgID  *string `json:"orgId"`
	BotID  *string `json:"botId"`
}

// SandboxView is a session's sandbox, as the lookup and the start show it.
type SandboxView struct {
	ID                *string              `json:"id"`
	Kind              *allocation.Kind     `json:"kind"`
	Provider          allocation.Provider  `json:"provider"`
	Allocation        *string              `json:"allocation"`
	AllocationRequest *allocation.Request  `json:"allocationRequest"`
	Resources         allocation.Resources `json:"resources"`
	Route             *RouteView           `json:"route"`
	ContainerScope    allocation.Scope     `json:"containerScope"`
	ContainerLabel    string               `json:"containerLabel"`
}

// RouteView is a legacy shared sandbox's route as stored.
type RouteView struct {
	Kind     *string `json:"kind"`
	RouteKey *string `json:"routeKey"`
	Suffix   *string `json:"suffix"`
}

// RecordInfo says which writer produced the record.
type RecordInfo struct {
	SchemaVersion int  `json:"schemaVersion"`
	Legacy        bool `json:"legacy"`
}

// TimeFormat is the contract's time format: RFC 3339, UTC, whole seconds.
const TimeFormat = "2006-01-02T15:04:05Z"

// View shows the record under the current allocation policy, which decides
// whether its allocation or provider is retired.
func (r *Record) View(p *allocation.Policy) View {
	v := View{
		SessionID:   r.SessionID,
		Owner:       r.OwnerView(),
		Sandbox:     r.SandboxView(),
		Runtime:     p.Retirement(r.Allocation(), r.Sandbox.Provider, false).Runtime(),
		Record:      RecordInfo{SchemaVersion: r.SchemaVersion, Legacy: r.Legacy()},
		Environment: r.Environment,
		Outcome:     OutcomeOf(r.Outcome),
	}
	if !r.CreatedAt.IsZero() {
		v.CreatedAt = nullable(r.CreatedAt.UTC().Truncate(time.Second).Format(TimeFormat))
	}
	return v
}

// RepositoryView is a stored repository: repo for github, url for gitlab
// and git, and the branch or null.
type RepositoryView struct {
	Type   string  `json:"type"`
	Repo   string  `json:"repo,omitempty"`
	URL    string  `json:"url,omitempty"`
	Branch *string `json:"branch"`
}

// View shows the repository.
func (r Repository) View() RepositoryView {
	return RepositoryView{Type: r.Type, Repo: r.Repo, URL: r.URL, Branch: nullable(r.Branch)}
}

// AgentView is a stored agent, its variant null when none was given.
type AgentView struct {
	Mode    string  `json:"mode"`
	Model   string  `json:"model"`
	Variant *string `json:"variant"`
}

// View shows the agent.
func (a Agent) View() AgentView { return AgentView{a.Mode, a.Model, nullable(a.Variant)} }

// TriggerView is the trigger run that started a session, as its events
// and the launch read show it.
type TriggerView struct {
	ID   string `json:"triggerId"`
	Kind string `json:"kind"`
	Slot string `json:"slot"`
}

// TriggerView shows the trigger run that started the session; nil for
// none.
func (r *Record) TriggerView() *TriggerView {
	tr := r.Trigger
	if tr == nil {
		return nil
	}
	return &TriggerView{ID: tr.ID, Kind: tr.Kind, Slot: tr.Slot.UTC().Truncate(time.Second).Format(TimeFormat)}
}

// ClaimView is a runner's claim as answered.
type ClaimView struct {
	Runner      string `json:"runner"`
	ClaimedAt   string `json:"claimedAt"`
	HeartbeatAt string `json:"heartbeatAt"`
}

// ClaimOf is c as answered, nil for none.
func ClaimOf(c *outcome.Claim) *ClaimView {
	if c == nil {
		return nil
	}
	return &ClaimView{Runner: c.Runner, ClaimedAt: c.ClaimedAt.UTC().Format(TimeFormat), HeartbeatAt: c.HeartbeatAt.UTC().Format(TimeFormat)}
}

// OwnerView shows the record's owner.
func (r *Record) OwnerView() OwnerView {
	return OwnerView{UserID: r.UserID, OrgID: nullable(r.OrgID), BotID: nullable(r.BotID)}
}

// SandboxView shows the record's sandbox. The allocation is the record's
// (see Record.Allocation); a byoc allocation has no name and shows only its
// request; resources are the allocation's, a code-review sandbox's, or
// unknown.
func (r *Record) SandboxView() SandboxView {
	sb := r.Sandbox
	a := r.Allocation()
	scope := allocation.ContainerScope(sb.Kind, sb.ID)
	v := SandboxView{
		ID:             nullable(sb.ID),
		Provider:       sb.Provider,
		ContainerScope: scope,
		ContainerLabel: scope.Label(),
	}
	if sb.Kind != "" {
		k := sb.Kind
		v.Kind = &k
	}
	switch {
	case !a.IsZero():
		v.Allocation = nullable(a.Name())
		req := a.Request()
		v.AllocationRequest = &req
		v.Resources = a.Resources()
	case sb.Kind == allocation.KindCodeReview:
		v.Resources = allocation.CodeReviewResources
	}
	if rt := sb.Route; rt != nil {
		v.Route = &RouteView{nullable(rt.Kind), nullable(rt.RouteKey), nullable(rt.Suffix)}
	}
	return v
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
