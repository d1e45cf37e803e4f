package trigger

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/start"
	"github.com/cloud-agent/control-plane/shared/store"
)

// Run statuses of a trigger's last slot.
const (
	StatusFired    = "fired"
	StatusFallback = "fallback"
	StatusFailed   = "failed"
)

const (
	// maxAhead is how far ahead of the clock an event may be and still
	// fire anything.
	maxAhead = 5 * time.Minute
	// reserve is the time before the function's timeout in which it takes
	// no new trigger.
	reserve = 10 * time.Second
	// maxNotes bounds the triggers named in an invocation's log line.
	maxNotes = 100
)

// Summary is what one invocation did; Due = Fired + Duplicates + Failed.
type Summary struct {
	Due        int `json:"due"`
	Fired      int `json:"fired"`
	Duplicates int `json:"duplicates"`
	Skipped    int `json:"skipped"`
	Fallbacks  int `json:"fallbacks"`
	Failed     int `json:"failed"`
}

// Firing starts the sessions of due triggers through the start service,
// once per trigger and slot.
type Firing struct {
	Table    *store.Table
	Settings *settings.Settings
	Start    *start.Service
	Log      *slog.Logger
	// Now defaults to the clock.
	Now func() time.Time
}

// note is what happened to one trigger, for the invocation's log line.
type note struct {
	Trigger string `json:"trigger"`
	Slot    string `json:"slot,omitempty"`
	Outcome string `json:"outcome"` // fired, fallback, duplicate, failed
	Code    string `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// tally is what one invocation did: its summary and the notes and
// attributes of its one log line.
type tally struct {
	Summary
	notes []note
	attrs []slog.Attr
}

func (inv *tally) note(n note) {
	if len(inv.notes) < maxNotes {
		inv.notes = append(inv.notes, n)
	}
}

// Handle answers one scheduled event. It returns an error, so that Lambda
// retries the event, only when a retry could help: a storage or settings
// fault left a slot due. It logs one JSON line.
func (f *Firing) Handle(ctx context.Context, ev events.EventBridgeEvent) (Summary, error) {
	begun := time.Now()
	ctx, record := invocation.With(ctx)
	var inv tally
	err := f.fire(ctx, ev, &inv)
	attrs := append(inv.attrs,
		slog.String("requestId", requestID(ctx)), slog.String("event", ev.ID), slog.Time("eventTime", ev.Time),
		slog.Any("summary", inv.Summary), slog.Any("triggers", inv.notes),
		slog.Int64("latencyMs", time.Since(begun).Milliseconds()), slog.Int("dynamodbRequests", record.Requests()))
	if w := record.Warnings(); len(w) > 0 {
		attrs = append(attrs, slog.Any("warnings", w))
	}
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelError
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	f.Log.LogAttrs(ctx, level, "fire", attrs...)
	return inv.Summary, err
}

func (f *Firing) fire(ctx context.Context, ev events.EventBridgeEvent, inv *tally) error {
	now := f.now()
	at := ev.Time
	if at.IsZero() {
		at = now // an event without a time fires as of the clock
	}
	if at.Sub(now) > maxAhead {
		inv.attrs = append(inv.attrs, slog.String("ignored", "the event is more than 5 minutes ahead of the clock"), slog.Time("clock", now))
		return nil
	}
	at = at.UTC().Truncate(time.Minute)
	var stop time.Time
	if d, ok := ctx.Deadline(); ok {
		stop = d.Add(-reserve)
	}
	ids, err := f.Table.DueTriggers(ctx, at)
	if err != nil || len(ids) == 0 {
		return err
	}
	policy, err := f.Settings.Policy(ctx) // one policy for every trigger
	if err != nil {
		inv.Due += len(ids) // as the index has them: all left due
		inv.Failed += len(ids)
		return err
	}
	var faults []error
	for i, id := range ids {
		if !stop.IsZero() && !time.Now().Before(stop) {
			inv.attrs = append(inv.attrs, slog.Int("leftDue", len(ids)-i))
			break
		}
		if err := f.fireOne(ctx, policy, id, at, inv); err != nil {
			faults = append(faults, err)
		}
	}
	return errors.Join(faults...)
}

// fireOne fires one trigger found due at the minute at, if it still is.
// The error is a fault that leaves its slot due.
func (f *Firing) fireOne(ctx context.Context, policy *allocation.Policy, id string, at time.Time, inv *tally) error {
	tr, err := f.Table.GetTrigger(ctx, id) // the index may be stale
	var broken *store.InvalidTriggerError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case errors.As(err, &broken):
		return f.park(ctx, inv, id, problem.InternalError, "the stored trigger does not decode")
	case err != nil:
		inv.Due++
		inv.Failed++
		return err
	case !tr.Active || tr.NextRunAt.After(at):
		return nil
	}
	sched, err := ParseSchedule(tr.Cron, tr.Timezone, at)
	if err != nil {
		return f.park(ctx, inv, id, problem.InvalidRequest, "the stored schedule does not parse")
	}
	slot, count := sched.Latest(tr.NextRunAt, at)
	if slot.IsZero() {
		slot, count = tr.NextRunAt, 1
	}
	run, duplicate, reason, err := f.run(ctx, policy, tr, slot)
	if err == nil {
		// Unless the trigger moved on meanwhile (another invocation
		// recorded the slot, or it was deleted).
		if err = f.Table.RecordRun(ctx, tr.ID, run, sched.Next(slot)); errors.Is(err, store.ErrTriggerMoved) {
			err = nil
		}
	}
	inv.Due++
	n := note{Trigger: id, Slot: slot.Format(session.TimeFormat), Outcome: run.Status, Code: run.Error, Reason: reason}
	switch {
	case err != nil:
		// The slot stays due, for the retry.
		inv.Failed++
		n.Outcome, n.Code = StatusFailed, string(problem.CodeOf(err))
	case duplicate:
		inv.Duplicates++
		n.Outcome = "duplicate"
	case run.Status == StatusFailed:
		inv.Failed++
	default:
		inv.Fired++
		if run.Status == StatusFallback {
			inv.Fallbacks++
		}
	}
	if err == nil {
		inv.Skipped += count - 1
	}
	inv.note(n)
	return err
}

// park stops a trigger that a retry cannot mend, counted as failed.
func (f *Firing) park(ctx context.Context, inv *tally, id string, code problem.Code, reason string) error {
	inv.Due++
	inv.Failed++
	inv.note(note{Trigger: id, Outcome: StatusFailed, Code: string(code), Reason: reason})
	return f.Table.Park(ctx, id, string(code))
}

// run obtains the session of a trigger's slot and says what to record:
// the run, whether the slot's ledger row existed already, and why a saved
// allocation fell back. The error is a fault that leaves the slot due.
func (f *Firing) run(ctx context.Context, policy *allocation.Policy, tr *store.Trigger, slot time.Time) (run store.Run, duplicate bool, reason string, err error) {
	saved, reason, err := policy.Saved(tr.SavedAllocation, tr.SavedRequest, allocation.Owner(tr.UserID, tr.OrgID))
	if err != nil {
		return store.Run{}, false, "", err // no usable default
	}
	if reason != "" || tr.SavedAllocation == "" && tr.SavedRequest == nil {
		saved = allocation.Allocation{} // the effective default
	}
	prompt := tr.Prompt
	req := &start.Request{
		OperationKey: start.ReservedKeyPrefix + tr.ID + ":" + slot.Format(session.TimeFormat),
		OrgID:        tr.OrgID, Repository: tr.Repository, Agent: tr.Agent,
		Prompt: &prompt, CreatedOnPlatform: start.PlatformScheduled,
	}
	var res *start.Result
	// A stored trigger holds what its route validated; one that no longer
	// passes (an older writer's) is refused like a bad request.
	if err = req.Validate(); err == nil {
		res, err = f.Start.Start(ctx, start.Command{
			UserID: tr.UserID, Request: req, Allocation: saved, Policy: policy, // the trigger's user and org, never a bot
		})
	}
	code := problem.CodeOf(err)
	switch {
	case err == nil:
		return store.Run{At: slot, SessionID: res.Record.SessionID, Status: statusOf(tr, res.Record.Allocation())}, res.Replayed, reason, nil
	case code == problem.ServiceUnavailable:
		return store.Run{}, false, reason, err
	}
	// Any ledger row for the slot consumes it, whatever it records.
	row, rerr := f.Table.GetLedger(ctx, tr.UserID, req.OperationKey)
	switch {
	case rerr == nil && !row.Expired(f.now()):
		run = store.Run{At: slot, SessionID: row.SessionID, Status: StatusFired}
		if rec, err := f.Table.GetSession(ctx, row.SessionID); err == nil {
			run.Status = statusOf(tr, rec.Allocation())
		} else if reason != "" {
			run.Status = StatusFallback
		}
		return run, true, reason, nil
	case rerr != nil && !errors.Is(rerr, store.ErrNotFound):
		return store.Run{}, false, reason, rerr
	case code.Status() >= 500:
		return store.Run{}, false, reason, err // unexpected: leave the slot due
	}
	return store.Run{At: slot, Status: StatusFailed, Error: string(code)}, false, reason, nil
}

// statusOf is the status of a slot whose session runs on a: a fallback
// when the trigger saved an allocation and the session does not run on it.
func statusOf(tr *store.Trigger, a allocation.Allocation) string {
	var saved allocation.Allocation
	switch {
	case tr.SavedRequest != nil:
		saved, _ = allocation.FromRequest(*tr.SavedRequest)
	case tr.SavedAllocation != "":
		saved, _ = allocation.ByName(tr.SavedAllocation)
	default:
		return StatusFired
	}
	if saved.IsZero() || saved.String() != a.String() {
		return StatusFallback
	}
	return StatusFired
}

func (f *Firing) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// requestID is the invocation's request id, or "" outside Lambda.
func requestID(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return lc.AwsRequestID
	}
	return ""
}
