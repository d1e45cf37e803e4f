package trigger

import (
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/outcome"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// Kinds of a trigger's runs.
const (
	KindScheduled = "scheduled"
	KindManual    = "manual"
	KindWebhook   = "webhook"
)

// Run statuses of a trigger's last slot.
const (
	StatusFired    = "fired"
	StatusFallback = "fallback"
	StatusFailed   = "failed"
)

// Trigger is a stored trigger: a scheduled one (Cron, Timezone,
// NextRunAt) or, from contract v6, a webhook one (Webhook, and no
// schedule). The saved allocation is kept as it was stored, a name or a
// byoc request (or neither): it is judged when the trigger starts a
// session.
type Trigger struct {
	ID       string
	UserID   string
	OrgID    string // "" when none
	Active   bool
	Cron     string // "" for a webhook trigger
	Timezone string
	// Webhook is a webhook trigger's side; nil for a scheduled trigger.
	Webhook    *Webhook
	Repository session.Repository
	Agent      session.Agent
	Prompt     string
	// SavedAllocation is the saved name; SavedRequest the saved byoc
	// request; both empty when none was saved.
	SavedAllocation string
	SavedRequest    *allocation.Request
	// EnvironmentID is the environment its sessions run in (contract v7),
	// "" for none: its owner's default applies (a webhook delivery takes
	// none).
	EnvironmentID string
	// CreatedAt is the creation instant, to the nanosecond: the item shows
	// it in whole seconds, and orders a user's triggers by it in full.
	CreatedAt time.Time
	NextRunAt time.Time // zero for a webhook trigger
	LastRun   Run       // zero before the first slot
	// Version counts the writes of the trigger (1 when created; 0 for an
	// item an older writer stored without it): its slots', its changes'
	// and its rewrites', each conditioned on the version it saw and moving
	// it on. Stopping a trigger (Park) and deleting it take it out of the
	// firing without one (store.Table.Park).
	Version int64
}

// Webhook is what a webhook trigger keeps of its deliveries' side: the
// one proof it accepts, the events that start a session, a token
// trigger's own header, and its secrets, never in clear.
type Webhook struct {
	// Verify is the proof: webhook.VerifyGitHub, VerifyStandard or
	// VerifyToken.
	Verify webhook.VerifyMode
	// Events lists the events that start a session; nil: every event.
	Events []string
	// Header is a token trigger's own header for its secret; "" for none.
	Header string
	// Secret is the current secret; Previous the one before the last
	// rotation, while it is still valid (nil when there is none).
	Secret   Secret
	Previous *Secret
}

// Secret is one of a webhook trigger's secrets as the table keeps it: a
// generated one by its version only (derived again when it is needed), an
// imported one sealed (encrypted under the stack's symmetric key).
type Secret struct {
	// Version is the secret's place in the trigger's secrets, from 1,
	// each new one above every one before it: a generated secret is
	// derived from it, so no number is issued twice. An imported secret
	// keeps the place it took (0 when stored before imports had one).
	Version int
	// Sealed is an imported secret, encrypted; nil for a generated one.
	Sealed    []byte
	CreatedAt time.Time
	// ValidUntil is when a previous secret stops proving deliveries; zero
	// for the current one.
	ValidUntil time.Time
}

// Run is what a slot of a trigger did: its last one, or one of its run
// history.
type Run struct {
	// Kind is KindScheduled for a slot's run, KindManual for a start now
	// (POST /v1/triggers/{triggerId}/run), KindWebhook for a delivery; ""
	// is scheduled.
	Kind string
	// ID keys a manual or webhook run beside the others of the same
	// millisecond: its session's id, or a fresh one for a refused start
	// ("" for a slot's).
	ID        string
	At        time.Time // the slot, or when a manual run started; zero when none
	SessionID string    // "" when no session was obtained
	Status    string    // fired, fallback or failed
	Error     string    // a problem code, or ""
	// RecordedAt is when the run was recorded (the history's; zero in a
	// trigger's last run).
	RecordedAt time.Time
	// A webhook run's delivery id and event ("" for none), and its rendered
	// prompt: the first RunPromptMax code points, and its full length.
	Delivery, Event string
	Prompt          string
	PromptLength    int
	// Announced says the run's session was started from contract v7 on:
	// announced to the execution plane, which reports its outcome (set by
	// ForSession; a run recorded before v7, or one that started nothing,
	// has none).
	Announced bool
	// Outcome is how the run's session ended, as its report wrote it on
	// the run; nil until then (and for every run not Announced).
	Outcome *outcome.Outcome
}

// Running is the outcome filter of the runs whose session was announced
// and has no outcome yet; the others are an outcome's statuses.
const Running = "running"

// ValidOutcomeFilter reports whether f is an outcome filter of a
// trigger's runs: running, or an outcome's status.
func ValidOutcomeFilter(f string) bool { return f == Running || outcome.Known(f) }

// InOutcome reports whether the run is listed under the outcome filter f
// (ValidOutcomeFilter): running, an announced run with no outcome yet;
// else a run whose outcome has the status f.
func (r Run) InOutcome(f string) bool {
	if f == Running {
		return r.Announced && r.Outcome == nil
	}
	return r.Outcome != nil && r.Outcome.Status == f
}

// ForSession is the run r as the new session rec records it, in the
// session's transaction: with its session; keyed by it for a manual or
// webhook run; and, for a manual run, started and recorded at the
// session's creation; announced, as every session started from contract
// v7 on is.
func (r Run) ForSession(rec *session.Record) Run {
	r.SessionID, r.Announced = rec.SessionID, true
	switch r.Kind {
	case KindManual:
		r.ID, r.At, r.RecordedAt = rec.SessionID, rec.CreatedAt, rec.CreatedAt
	case KindWebhook:
		r.ID = rec.SessionID
	}
	return r
}

// Parked is the run that stopping the trigger records for its slot (its
// next run): failed with code, recorded at.
func (t *Trigger) Parked(code string, at time.Time) Run {
	return Run{At: t.NextRunAt, Status: StatusFailed, Error: code, RecordedAt: at}
}

// RunPromptMax is how many code points of a webhook run's rendered prompt
// its run keeps.
const RunPromptMax = 1000

// Excerpt is what a webhook run keeps of its rendered prompt: the first
// RunPromptMax code points, and the prompt's length in code points.
func Excerpt(prompt string) (excerpt string, length int) {
	for i := range prompt {
		if length == RunPromptMax {
			excerpt = prompt[:i]
		}
		length++
	}
	if length <= RunPromptMax {
		excerpt = prompt
	}
	return excerpt, length
}
