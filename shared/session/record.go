// Package session owns the session record: its fields and its sandbox,
// the view the API shows of it, and the repository and agent of a request
// body, read into the record's types. It knows nothing of DynamoDB: the
// record's items, the current version 2 shape and every legacy shape still
// in the table, are the store's (store.EncodeSession, store.DecodeSession).
package session

import (
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/outcome"
)

// Record is a stored session, current or legacy.
type Record struct {
	SessionID string
	// SchemaVersion is 2 for the nested metadata shape, 1 for the legacy
	// flat one.
	SchemaVersion     int
	UserID            string
	OrgID             string // "" when none
	BotID             string // "" when none
	CreatedOnPlatform string
	Repository        Repository
	Agent             Agent
	// CreatedAt is zero when the record does not say.
	CreatedAt time.Time
	Sandbox   Sandbox
	// Environment is the environment the session was started in (contract
	// v7), nil for none.
	Environment *EnvironmentRef
	// Launch is what a new session is started with, kept beside its
	// metadata; nil for a record read back (readers of the metadata never
	// see it).
	Launch *Launch
	// Trigger is the trigger run that started the session (contract v7),
	// nil for none.
	Trigger *TriggerRef
	// Claim is the runner's claim of the session, and Outcome how its run
	// ended (contract v7); nil for none.
	Claim   *outcome.Claim
	Outcome *outcome.Outcome
}

// TriggerRef is the trigger run that started a session: the trigger, the
// kind of its run, the run's slot, and the run's key in the trigger's
// history (its sort key, as the store keeps it), where the session's
// outcome is written too while the run exists.
type TriggerRef struct {
	ID string
	// Kind is the run's: scheduled, manual or webhook (trigger.Kind*).
	Kind   string
	Slot   time.Time
	RunKey string
}

// EnvironmentRef is the environment a session was started in, as its
// metadata keeps it and the API shows it: never a value.
type EnvironmentRef struct {
	ID      string `json:"environmentId"`
	Name    string `json:"name"`
	Version int    `json:"version"`
}

// RefOf is e's reference as a session keeps it: nil for none.
func RefOf(e *environment.Environment) *EnvironmentRef {
	if e == nil {
		return nil
	}
	return &EnvironmentRef{ID: e.ID, Name: e.Name, Version: e.Version}
}

// Launch is what a new session is started with, written in its start's
// transaction beside its metadata: its prompt, and the environment as it
// was (secret values as their ciphertext), which a later change or delete
// of the environment never reaches.
type Launch struct {
	Prompt      *string // nil when none was given
	Environment *environment.Environment
}

// Repository is what the session works on.
type Repository struct {
	Type   string // github, gitlab or git
	Repo   string // owner/name, github only
	URL    string // gitlab and git
	Branch string
}

// Agent is the agent the session runs.
type Agent struct {
	Mode    string
	Model   string
	Variant string
}

// Sandbox is a record's sandbox as stored: an empty member was not stored.
type Sandbox struct {
	ID   string
	Kind allocation.Kind
	// Provider is the stored provider, or cloudflare when none is stored
	// (ProviderStored is then false).
	Provider       allocation.Provider
	ProviderStored bool
	// Allocation is the stored allocation (a name, or a request object);
	// zero when none is stored.
	Allocation allocation.Allocation
	Route      *Route
}

// Route is a legacy shared sandbox's route.
type Route struct {
	Kind     string
	RouteKey string
	Suffix   string
}

// Allocation is the record's allocation: the stored one, or
// cloudflare-shared for a shared kind or a legacy shared id.
func (r *Record) Allocation() allocation.Allocation {
	return allocation.RecordAllocation(r.Sandbox.Allocation, r.Sandbox.Kind, r.Sandbox.ID)
}

// Legacy reports whether the record is anything but what the current writer
// produces: version 2, kind isolated or code-review, a stored provider, an
// sbx- id, no route; and, as only legacy records hold it, not the
// cloudflare-shared allocation.
func (r *Record) Legacy() bool {
	s := r.Sandbox
	current := r.SchemaVersion == 2 &&
		(s.Kind == allocation.KindIsolated || s.Kind == allocation.KindCodeReview) &&
		s.ProviderStored &&
		allocation.Classify(s.ID) == allocation.ClassSandbox &&
		s.Route == nil &&
		s.Allocation.Name() != allocation.CloudflareShared
	return !current
}
