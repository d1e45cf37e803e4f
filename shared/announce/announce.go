// Package announce decides, from values, what a change of a session's
// item announces on the sessions' bus (contract v7): Session Started for
// each new session the current writer wrote, Session Ended for each
// outcome recorded or changed, nothing for any other change; and the
// events' details, which carry no prompt, no variable and no secret but
// the session's own token, in Session Started's launch.
package announce

import (
	"github.com/cloud-agent/control-plane/shared/session"
)

// Source is every event's source.
const Source = "cloud-agent.control-plane"

// The events' detail types.
const (
	Started = "Session Started"
	Ended   = "Session Ended"
)

// Of is what the change of a session's item from old to next announces
// (nil: none was there, or none is now): Started for a new session that
// is not legacy (old nil), Ended when next holds an outcome of a later
// revision than old's, "" for nothing.
func Of(old, next *session.Record) string {
	switch {
	case next == nil || next.Legacy():
		return ""
	case old == nil:
		return Started
	case next.Outcome != nil && (old.Outcome == nil || next.Outcome.Revision > old.Outcome.Revision):
		return Ended
	}
	return ""
}

// StartedDetail is Session Started's detail.
type StartedDetail struct {
	SessionID         string               `json:"sessionId"`
	Sequence          int                  `json:"sequence"`
	Owner             session.OwnerView    `json:"owner"`
	CreatedOnPlatform *string              `json:"createdOnPlatform"`
	CreatedAt         string               `json:"createdAt"`
	Sandbox           Sandbox              `json:"sandbox"`
	Environment       *Environment         `json:"environment"`
	Trigger           *session.TriggerView `json:"trigger"`
	Launch            Launch               `json:"launch"`
}

// Sandbox is a started session's sandbox; Allocation is null for a byoc
// allocation, which has no name.
type Sandbox struct {
	ID         string  `json:"id"`
	Kind       string  `json:"kind"`
	Provider   string  `json:"provider"`
	Allocation *string `json:"allocation"`
}

// Environment is the environment a session was started in.
type Environment struct {
	ID      string `json:"environmentId"`
	Version int    `json:"version"`
}

// Launch is where and with what the execution plane fetches what a
// session was started with: the runtime route, and the session's token.
type Launch struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// StartedOf is the Session Started of rec: its launch read at the API's
// URL apiURL, opened by token.
func StartedOf(rec *session.Record, apiURL, token string) StartedDetail {
	sb := rec.SandboxView()
	d := StartedDetail{
		SessionID: rec.SessionID, Sequence: 1, Owner: rec.OwnerView(), CreatedAt: rec.CreatedAt.UTC().Format(session.TimeFormat),
		Sandbox: Sandbox{ID: rec.Sandbox.ID, Kind: string(rec.Sandbox.Kind), Provider: string(rec.Sandbox.Provider), Allocation: sb.Allocation},
		Trigger: rec.TriggerView(),
		Launch:  Launch{URL: apiURL + "/v1/runtime/sessions/" + rec.SessionID, Token: token},
	}
	if rec.CreatedOnPlatform != "" {
		d.CreatedOnPlatform = &rec.CreatedOnPlatform
	}
	if e := rec.Environment; e != nil {
		d.Environment = &Environment{ID: e.ID, Version: e.Version}
	}
	return d
}

// EndedDetail is Session Ended's detail. Final is false for a timed_out
// mark, which a report may still replace.
type EndedDetail struct {
	SessionID string               `json:"sessionId"`
	Sequence  int                  `json:"sequence"`
	Owner     session.OwnerView    `json:"owner"`
	Trigger   *session.TriggerView `json:"trigger"`
	Sandbox   EndedSandbox         `json:"sandbox"`
	Outcome   *session.OutcomeView `json:"outcome"`
	Final     bool                 `json:"final"`
}

// EndedSandbox is an ended session's sandbox.
type EndedSandbox struct {
	ID string `json:"id"`
}

// EndedOf is the Session Ended of rec, whose outcome is recorded: its
// sequence is one more than the outcome's revision.
func EndedOf(rec *session.Record) EndedDetail {
	return EndedDetail{
		SessionID: rec.SessionID, Sequence: rec.Outcome.Revision + 1, Owner: rec.OwnerView(), Trigger: rec.TriggerView(),
		Sandbox: EndedSandbox{ID: rec.Sandbox.ID}, Outcome: session.OutcomeOf(rec.Outcome), Final: rec.Outcome.Final(),
	}
}
