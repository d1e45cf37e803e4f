package triggerapi

import (
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// View is a trigger as the API shows it; an unknown value is null.
type View struct {
	TriggerID         string         `json:"triggerId"`
	OrgID             *string        `json:"orgId"`
	Active            bool           `json:"active"`
	Schedule          ScheduleView   `json:"schedule"`
	Repository        RepositoryView `json:"repository"`
	Agent             AgentView      `json:"agent"`
	Prompt            string         `json:"prompt"`
	SandboxAllocation any            `json:"sandboxAllocation"` // a name, a byoc request object, or null
	CreatedAt         string         `json:"createdAt"`
	NextRunAt         string         `json:"nextRunAt"`
	LastRunAt         *string        `json:"lastRunAt"`
	LastSessionID     *string        `json:"lastSessionId"`
	LastRunStatus     *string        `json:"lastRunStatus"`
	LastError         *string        `json:"lastError"`
}

// ScheduleView is a trigger's schedule; the zone is UTC when none was given.
type ScheduleView struct {
	Cron     string `json:"cron"`
	Timezone string `json:"timezone"`
}

// RepositoryView is a stored repository: repo for github, url for gitlab
// and git, and the branch or null.
type RepositoryView struct {
	Type   string  `json:"type"`
	Repo   string  `json:"repo,omitempty"`
	URL    string  `json:"url,omitempty"`
	Branch *string `json:"branch"`
}

// AgentView is a stored agent, its variant null when none was given.
type AgentView struct {
	Mode    string  `json:"mode"`
	Model   string  `json:"model"`
	Variant *string `json:"variant"`
}

func viewOf(tr *trigger.Trigger) View {
	v := View{
		TriggerID: tr.ID, OrgID: nullable(tr.OrgID), Active: tr.Active,
		Schedule: ScheduleView{tr.Cron, tr.Timezone},
		Repository: RepositoryView{
			Type: tr.Repository.Type, Repo: tr.Repository.Repo, URL: tr.Repository.URL, Branch: nullable(tr.Repository.Branch),
		},
		Agent:         AgentView{tr.Agent.Mode, tr.Agent.Model, nullable(tr.Agent.Variant)},
		Prompt:        tr.Prompt,
		CreatedAt:     tr.CreatedAt.UTC().Format(session.TimeFormat),
		NextRunAt:     tr.NextRunAt.UTC().Format(session.TimeFormat),
		LastSessionID: nullable(tr.LastRun.SessionID), LastRunStatus: nullable(tr.LastRun.Status),
		LastError: nullable(tr.LastRun.Error),
	}
	switch {
	case tr.SavedRequest != nil:
		v.SandboxAllocation = *tr.SavedRequest
	case tr.SavedAllocation != "":
		v.SandboxAllocation = tr.SavedAllocation
	}
	if !tr.LastRun.At.IsZero() {
		v.LastRunAt = nullable(tr.LastRun.At.UTC().Format(session.TimeFormat))
	}
	return v
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
