package triggerapi

import (
	"context"
	"net/http"
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// View is a trigger as the API shows it; an unknown value is null. A
// scheduled trigger has a schedule and nextRunAt, and webhook null; a
// webhook trigger the other way round.
type View struct {
	TriggerID         string                 `json:"triggerId"`
	OrgID             *string                `json:"orgId"`
	Active            bool                   `json:"active"`
	Schedule          *ScheduleView          `json:"schedule"`
	Webhook           *WebhookView           `json:"webhook"`
	Repository        session.RepositoryView `json:"repository"`
	Agent             session.AgentView      `json:"agent"`
	Prompt            string                 `json:"prompt"`
	SandboxAllocation any                    `json:"sandboxAllocation"` // a name, a byoc request object, or null
	EnvironmentID     *string                `json:"environmentId"`
	CreatedAt         string                 `json:"createdAt"`
	NextRunAt         *string                `json:"nextRunAt"`
	LastRunAt         *string                `json:"lastRunAt"`
	LastSessionID     *string                `json:"lastSessionId"`
	LastRunStatus     *string                `json:"lastRunStatus"`
	LastError         *string                `json:"lastError"`
	// LastOutcome is the outcome of the last session, null while it runs,
	// when there is none, or when it is not read (Service.views).
	LastOutcome *session.OutcomeView `json:"lastOutcome"`
}

// ScheduleView is a trigger's schedule; the zone is UTC when none was given.
type ScheduleView struct {
	Cron     string `json:"cron"`
	Timezone string `json:"timezone"`
}

// WebhookView is a webhook trigger's side: where its deliveries go, the
// proof it accepts, the events that start a session (null: every event),
// a token trigger's own header (left out when it has none), and its
// secrets' times. Secret is the secret in clear, set only in the answers
// that make a generated one (the create, a rotation) and left out
// everywhere else.
type WebhookView struct {
	URL                      string    `json:"url"`
	Verify                   string    `json:"verify"`
	Events                   *[]string `json:"events"`
	Header                   string    `json:"header,omitempty"`
	Secret                   string    `json:"secret,omitempty"`
	SecretCreatedAt          string    `json:"secretCreatedAt"`
	PreviousSecretValidUntil *string   `json:"previousSecretValidUntil"`
}

// viewOf is the trigger as the API shows it, without its last outcome
// (Service.views reads it).
func viewOf(tr *trigger.Trigger) View {
	v := View{
		TriggerID: tr.ID, OrgID: httpapi.Nullable(tr.OrgID), Active: tr.Active,
		Repository:    tr.Repository.View(),
		Agent:         tr.Agent.View(),
		Prompt:        tr.Prompt,
		CreatedAt:     timeText(tr.CreatedAt),
		LastSessionID: httpapi.Nullable(tr.LastRun.SessionID), LastRunStatus: httpapi.Nullable(tr.LastRun.Status),
		LastError: httpapi.Nullable(tr.LastRun.Error),
	}
	if w := tr.Webhook; w != nil {
		v.Webhook = &WebhookView{
			URL: "/v1/hooks/" + tr.ID, Verify: string(w.Verify), Header: w.Header,
			SecretCreatedAt: timeText(w.Secret.CreatedAt),
		}
		if w.Events != nil {
			v.Webhook.Events = &w.Events
		}
		if w.Previous != nil {
			v.Webhook.PreviousSecretValidUntil = httpapi.Nullable(timeText(w.Previous.ValidUntil))
		}
	} else {
		v.Schedule = &ScheduleView{tr.Cron, tr.Timezone}
		v.NextRunAt = httpapi.Nullable(timeText(tr.NextRunAt))
	}
	v.SandboxAllocation = allocation.SavedView(tr.SavedAllocation, tr.SavedRequest)
	v.EnvironmentID = httpapi.Nullable(tr.EnvironmentID)
	if !tr.LastRun.At.IsZero() {
		v.LastRunAt = httpapi.Nullable(timeText(tr.LastRun.At))
	}
	return v
}

// timeText is a time as the API writes it: RFC 3339 in UTC, whole seconds.
func timeText(t time.Time) string { return t.UTC().Format(session.TimeFormat) }

// views are the triggers as the API shows them, each with the outcome of
// its last session, read in one BatchGetItem for them all (none when no
// trigger has a last session). A session whose outcome does not decode
// shows none, and a warning on the invocation's line names it.
func (s *Service) views(ctx context.Context, triggers ...*trigger.Trigger) ([]View, error) {
	var ids []string
	for _, tr := range triggers {
		if id := tr.LastRun.SessionID; id != "" {
			ids = append(ids, id)
		}
	}
	found, broken, err := s.Table.SessionOutcomes(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, b := range broken {
		invocation.Warn(ctx, "a trigger's last session shows no outcome: "+b.Error())
	}
	views := make([]View, len(triggers))
	for i, tr := range triggers {
		views[i] = viewOf(tr)
		views[i].LastOutcome = session.OutcomeOf(found[tr.LastRun.SessionID])
	}
	return views, nil
}

// view is one trigger as the API shows it, with its last outcome (views).
func (s *Service) view(ctx context.Context, tr *trigger.Trigger) (View, error) {
	v, err := s.views(ctx, tr)
	if err != nil {
		return View{}, err
	}
	return v[0], nil
}

// written is a trigger just written as the API shows it, with its last
// outcome (view); a fault of that read is a warning and a null
// lastOutcome: the write has happened, and its answer (a secret shown
// once) is not lost to a read beside it, nor retried as a new write.
func (s *Service) written(ctx context.Context, tr *trigger.Trigger) View {
	v, err := s.view(ctx, tr)
	if err != nil {
		invocation.Warn(ctx, "the trigger's last outcome could not be read: "+err.Error())
		return viewOf(tr)
	}
	return v
}

// answer is 200 with the trigger, with its last outcome (views).
func (s *Service) answer(ctx context.Context, tr *trigger.Trigger) (httpapi.Response, error) {
	v, err := s.view(ctx, tr)
	if err != nil {
		return httpapi.Response{}, err
	}
	return httpapi.Response{Status: http.StatusOK, Body: v}, nil
}
