package trigger

import (
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/session"
)

// Kinds of a trigger's runs.
const (
	KindScheduled = "scheduled"
	KindManual    = "manual"
)

// Run statuses of a trigger's last slot.
const (
	StatusFired    = "fired"
	StatusFallback = "fallback"
	StatusFailed   = "failed"
)

// Trigger is a stored scheduled trigger. The saved allocation is kept as
// it was stored, a name or a byoc request (or neither): it is judged when
// the trigger fires.
type Trigger struct {
	ID         string
	UserID     string
	OrgID      string // "" when none
	Active     bool
	Cron       string
	Timezone   string
	Repository session.Repository
	Agent      session.Agent
	Prompt     string
	// SavedAllocation is the saved name; SavedRequest the saved byoc
	// request; both empty when none was saved.
	SavedAllocation string
	SavedRequest    *allocation.Request
	// CreatedAt is the creation instant, to the nanosecond: the item shows
	// it in whole seconds, and orders a user's triggers by it in full.
	CreatedAt time.Time
	NextRunAt time.Time
	LastRun   Run // zero before the first slot
	// Version counts the writes of the trigger (1 when created; 0 for an
	// item an older writer stored without it): its slots', its changes'
	// and its rewrites', each conditioned on the version it saw and moving
	// it on. Stopping a trigger (Park) and deleting it take it out of the
	// firing without one (store.Table.Park).
	Version int64
}

// Run is what a slot of a trigger did: its last one, or one of its run
// history.
type Run struct {
	// Kind is KindScheduled for a slot's run, KindManual for a start now
	// (POST /v1/triggers/{triggerId}/run); "" is scheduled.
	Kind string
	// ID keys a manual run beside the others of the same second: its
	// session's id, or a fresh one for a refused start ("" for a slot's).
	ID        string
	At        time.Time // the slot, or when a manual run started; zero when none
	SessionID string    // "" when no session was obtained
	Status    string    // fired, fallback or failed
	Error     string    // a problem code, or ""
	// RecordedAt is when the run was recorded (the history's; zero in a
	// trigger's last run).
	RecordedAt time.Time
}

// Position is where a page of a user's triggers ends: the last trigger
// returned.
type Position struct {
	ID        string
	CreatedAt time.Time
}
