// Package firing fires due scheduled triggers: every minute it finds them
// in the due index, takes each one's slot, and starts its session through
// the executor (package commit), once per trigger and slot, a bounded number at a time.
// Then it sweeps: it marks timed_out the sessions whose outcome is overdue.
package firing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/triggerrun"
)

const (
	// maxAhead is how far ahead of the clock an event may be and still
	// fire anything.
	maxAhead = 5 * time.Minute
	// reserve is the time before the function's timeout in which it takes
	// no new trigger.
	reserve = 10 * time.Second
	// lastWord is the time before the function's timeout by which every
	// trigger's work ends, a straggler's as a fault, so that the summary is
	// returned and logged.
	lastWord = 3 * time.Second
	// defaultConcurrency is how many due triggers fire at a time when
	// FIRING_CONCURRENCY is not set.
	defaultConcurrency = 64
)

// PerTransaction is how many slots' new sessions one transaction carries
// when every worker waits on one: the concurrency over it is how many
// transactions go out at a time (store.Table.Grouped). More share the
// SDK's and the HTTP client's work per request further, and make a slot
// wait longer for a send (docs/decisions.md, "Grouped transactions").
const PerTransaction = 8

// MaxConcurrency bounds the concurrency (FIRING_CONCURRENCY): the
// functions keep as many idle connections to an endpoint (app.HTTPClient).
const MaxConcurrency = 256

// ParseConcurrency reads a concurrency as the template sets it: a whole
// number from 1 to MaxConcurrency, defaultConcurrency when empty.
func ParseConcurrency(s string) (int, error) {
	if s == "" {
		return defaultConcurrency, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxConcurrency {
		return 0, fmt.Errorf("a whole number from 1 to %d, not %q", MaxConcurrency, s)
	}
	return n, nil
}

// DueStore is what the firing reads and writes itself: the due index,
// a due trigger read again, a trigger stopped, and the sweep's overdue
// sessions and their marks (store.Table).
type DueStore interface {
	OverdueSessions(ctx context.Context, shard int, before time.Time, limit int) ([]store.OverdueSession, error)
	MarkTimedOut(ctx context.Context, s store.OverdueSession, at time.Time) (bool, error)
	EachDue(ctx context.Context, at time.Time, shards []int, found func([]store.Due)) error
	ReadEnvironments(ctx context.Context, sources []environment.Source) (*environment.Found, error)
	GetTrigger(ctx context.Context, id string) (*trigger.Trigger, error)
	Park(ctx context.Context, id string, seen *trigger.Trigger, run trigger.Run) error
	Grouped(ctx context.Context, sends int) context.Context
}

// Firing starts the sessions of due triggers through the executor,
// once per trigger and slot.
type Firing struct {
	Table    DueStore
	Settings *settings.Settings
	Runs     *triggerrun.Runner
	Log      *slog.Logger
	// Concurrency bounds how many due triggers fire at a time
	// (defaultConcurrency when 0; 1 fires them one at a time).
	Concurrency int
	// Now defaults to the clock.
	Now func() time.Time
	// Metrics is the execution environment's; nil logs no metrics.
	Metrics *invocation.Metrics
}

// Handle answers one scheduled event, firing the due triggers of the
// shards its detail names (share; every shard when it names none), then
// sweeping the same shards' overdue sessions (sweep). It returns an
// error, so that Lambda retries the event, when a retry could help: a
// storage or settings fault left a slot due or a session unmarked; the error names the
// first maxFaults faults and counts the rest. A detail that names no valid
// share fires nothing and returns an error too, for the alarms. It logs one JSON line, with the summary and the lag as
// metrics, zeros included, the first maxNotes triggers handled, and the
// error: the rest are counted in moreTriggers and moreFaults, members
// present only when they are not 0.
func (f *Firing) Handle(ctx context.Context, ev events.EventBridgeEvent) (Summary, error) {
	begun := time.Now()
	ctx, record := f.Metrics.Begin(ctx)
	var inv tally
	err := f.fire(ctx, ev, &inv)
	now := f.now()
	inv.end(now)
	invocation.Add(ctx, inv.metrics()...)
	attrs := append(inv.attrs,
		slog.String("requestId", requestID(ctx)), slog.String("event", ev.ID), slog.Time("eventTime", ev.Time),
		slog.Any("summary", inv.Summary), slog.Any("triggers", inv.notes),
		slog.Int64("latencyMs", time.Since(begun).Milliseconds()))
	if inv.moreNotes > 0 {
		attrs = append(attrs, slog.Int("moreTriggers", inv.moreNotes))
	}
	if inv.moreFaults > 0 {
		attrs = append(attrs, slog.Int("moreFaults", inv.moreFaults))
	}
	attrs = append(attrs, record.Attrs(now)...)
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelError
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	f.Log.LogAttrs(ctx, level, "fire", attrs...)
	return inv.Summary, err
}

func (f *Firing) fire(ctx context.Context, ev events.EventBridgeEvent, inv *tally) error {
	// A share that names no valid shards is the schedule's
	// misconfiguration: no retry mends it, but the function's error makes
	// the alarms see it (docs/decisions.md, "Fan-out").
	shards, err := share(ev.Detail)
	if err != nil {
		return err
	}
	inv.attrs = append(inv.attrs, slog.Any("shards", shards))
	now := f.now()
	at := ev.Time
	if at.IsZero() {
		at = now // an event without a time fires as of the clock
	}
	if at.Sub(now) > maxAhead {
		inv.attrs = append(inv.attrs, slog.String("ignored", "the event is more than 5 minutes ahead of the clock"), slog.Time("clock", now))
		return nil
	}
	at, minute := at.UTC(), at.UTC().Truncate(time.Minute)
	var stop time.Time
	if d, ok := ctx.Deadline(); ok {
		stop = d.Add(-reserve)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-lastWord))
		defer cancel()
	}
	// The policy is read while the shards are queried, and each shard's
	// triggers fire as its query ends (docs/decisions.md, "The firing's
	// first transaction").
	q := newQueue()
	go func() {
		q.close(f.Table.EachDue(ctx, minute, shards, func(due []store.Due) { q.add(f.environments(ctx, due)) }))
	}()
	policy, perr := f.Settings.Policy(ctx) // one policy for every trigger
	if perr != nil {
		return unread(ctx, q, minute, inv, perr)
	}
	undecoded := f.pool(ctx, policy, q, minute, stop, inv)
	due, err := q.rest()
	if len(due) > 0 {
		inv.attrs = append(inv.attrs, slog.Int("leftDue", len(due)))
		for _, d := range due {
			inv.wait(indexSlot(d, minute))
		}
	}
	if undecoded > 0 {
		invocation.Warn(ctx, fmt.Sprintf("due-index entries that did not decode, each read again: %d", undecoded))
	}
	f.sweep(ctx, at, shards, stop, inv)
	return errors.Join(err, inv.err())
}

// unread ends an invocation whose settings could not be read (perr): the
// due triggers the queries found are all left due, counted as failed,
// and the sweep does not run. The error is perr when a trigger was due,
// else the queries' own.
func unread(ctx context.Context, q *queue, minute time.Time, inv *tally, perr error) error {
	invocation.Warn(ctx, "no session was swept: the settings were not read")
	due, err := q.rest()
	inv.Due += len(due) // as the index has them: all left due
	inv.Failed += len(due)
	for _, d := range due {
		inv.wait(indexSlot(d, minute))
	}
	if len(due) == 0 {
		return err
	}
	return perr
}

// environments reads, in one BatchGetItem for up to 100 items, what the
// starts of a shard's due triggers resolve their environments from, as
// the index shows them, and hands it to each; nothing is cached across
// invocations. When the read fails, each start reads its own.
func (f *Firing) environments(ctx context.Context, due []store.Due) []store.Due {
	var sources []environment.Source
	for _, d := range due {
		if tr := d.Trigger; tr != nil {
			sources = append(sources, environment.Source{UserID: tr.UserID, OrgID: tr.OrgID, Named: tr.EnvironmentID})
		}
	}
	if len(sources) == 0 {
		return due
	}
	found, err := f.Table.ReadEnvironments(ctx, sources)
	if err != nil {
		invocation.Warn(ctx, "the due triggers' environments were not read; each start reads its own: "+err.Error())
		return due
	}
	for i := range due {
		due[i].Environments = found
	}
	return due
}

// pool fires the due triggers as the queries find them, concurrency() at
// a time: workers take the longest due first, each to its end; none is
// taken once stop (the reserve before the timeout; zero: none) has begun.
// It returns how many of those taken were index entries that did not
// decode, which fireOne reads again.
func (f *Firing) pool(ctx context.Context, policy *allocation.Policy, q *queue, at, stop time.Time, inv *tally) int {
	// The new sessions' transactions of triggers fired at the same moment
	// go out together (store.Table.Grouped), about PerTransaction of them
	// in each when every worker waits on one.
	ctx = f.Table.Grouped(ctx, Sends(f.concurrency()))
	var undecoded atomic.Int64
	var wg sync.WaitGroup
	for range f.concurrency() {
		wg.Go(func() {
			for d, ok := q.take(stop); ok; d, ok = q.take(stop) {
				if d.Trigger == nil {
					undecoded.Add(1)
				}
				o := f.fireOne(ctx, policy, d, at)
				if o.note != nil && o.slot.IsZero() {
					o.slot = indexSlot(d, at)
				}
				inv.add(o, f.now())
			}
		})
	}
	wg.Wait()
	return int(undecoded.Load())
}

// Sends is how many grouped transactions go out at a time for a
// concurrency.
func Sends(concurrency int) int {
	return (concurrency + PerTransaction - 1) / PerTransaction
}

func (f *Firing) concurrency() int {
	if f.Concurrency > 0 {
		return f.Concurrency
	}
	return defaultConcurrency
}

// fireOne fires one trigger that the index showed due at the minute at,
// if it still is. It judges the index's copy only through writes
// conditioned on it: when the trigger changed since, it is read again,
// strongly consistent, and judged again (commit.Again).
func (f *Firing) fireOne(ctx context.Context, policy *allocation.Policy, d store.Due, at time.Time) outcome {
	tr := d.Trigger
	o, err := commit.Again(ctx, store.ErrTriggerMoved, errChanging, func() (outcome, error) {
		o := f.judge(ctx, policy, d.ID, tr, d.Environments, at)
		tr = nil
		if errors.Is(o.fault, store.ErrTriggerMoved) {
			return o, o.fault
		}
		return o, nil
	})
	if err != nil {
		return failure(d.ID, time.Time{}, err)
	}
	return o
}

// errChanging is a trigger that another invocation, a change or a deletion
// kept changing while it was fired.
var errChanging = problem.New(problem.ServiceUnavailable, "the trigger kept changing while it was fired")

// judge fires the trigger as read, or as the index showed it (strong
// false), at the minute at. What is not conditioned (stopping a trigger
// that cannot fire) is decided on a strong read only: an index copy whose
// schedule does not parse is read again first.
func (f *Firing) judge(ctx context.Context, policy *allocation.Policy, id string, tr *trigger.Trigger, found *environment.Found, at time.Time) outcome {
	strong := tr == nil
	if strong {
		var o outcome
		if tr, o = f.read(ctx, id); tr == nil {
			return o
		}
	}
	if !tr.Active || tr.NextRunAt.After(at) {
		return outcome{}
	}
	j, err := slotOf(tr, at)
	switch {
	case err != nil && !strong:
		return f.judge(ctx, policy, id, nil, found, at)
	case err != nil:
		// Stopped on the condition that it is as read: a change may have
		// mended it since.
		return f.park(ctx, id, tr, problem.InvalidRequest, "the stored schedule does not parse")
	}
	fd, err := f.Runs.StartSlot(ctx, policy, triggerrun.Slot{Trigger: j.tr, At: j.slot, Next: j.next, Now: f.now(), Environments: found})
	if errors.Is(err, store.ErrTriggerMoved) {
		return outcome{fault: err}
	}
	return j.outcome(fd, err)
}

// read reads a due trigger, strongly consistent. When there is nothing to
// fire, the trigger is nil and the outcome final: none when it is gone,
// the trigger stopped when it does not decode, or the fault.
func (f *Firing) read(ctx context.Context, id string) (*trigger.Trigger, outcome) {
	tr, err := f.Table.GetTrigger(ctx, id)
	var broken *store.InvalidTriggerError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, outcome{}
	case errors.As(err, &broken):
		return nil, f.park(ctx, id, nil, problem.InternalError, "the stored trigger does not decode")
	case err != nil:
		return nil, failure(id, time.Time{}, err)
	}
	return tr, outcome{}
}

// slotJob is a due trigger's slot: the trigger as judged, its slot, the
// schedule's next time after the slot, and how many of the trigger's
// slots it stands for (the others are skipped).
type slotJob struct {
	tr         *trigger.Trigger
	slot, next time.Time
	count      int
}

// slotOf is the slot of a trigger due at the minute at: the latest time
// of its schedule at or before at.
func slotOf(tr *trigger.Trigger, at time.Time) (slotJob, error) {
	sched, err := trigger.ParseSchedule(tr.Cron, tr.Timezone, at)
	if err != nil {
		return slotJob{}, err
	}
	j := slotJob{tr: tr}
	j.slot, j.count = sched.Latest(tr.NextRunAt, at)
	if j.slot.IsZero() {
		// nextRunAt is no slot of the schedule (an older writer's, or a
		// hand's): the slot is still the latest at or before the minute.
		if j.slot, _ = sched.Latest(at.AddDate(-5, 0, 0), at); j.slot.IsZero() {
			j.slot = tr.NextRunAt
		}
		j.count = 1
	}
	j.next = sched.Next(j.slot)
	return j, nil
}

// outcome is what firing the slot did: the run fd recorded (the others of
// its count skipped), or the fault err that left the slot due.
func (j slotJob) outcome(fd triggerrun.Fired, err error) outcome {
	if err != nil {
		return failure(j.tr.ID, j.slot, err) // the slot stays due, for the retry
	}
	n := &note{Trigger: j.tr.ID, Slot: j.slot.Format(session.TimeFormat), Outcome: fd.Run.Status, Code: fd.Run.Error, Reason: fd.Choice.Fallback.Reason}
	o := outcome{sum: Summary{Due: 1, Skipped: j.count - 1}, note: n, slot: j.slot}
	switch {
	case fd.Duplicate:
		o.sum.Duplicates = 1
		n.Outcome = "duplicate"
	case fd.Run.Status == trigger.StatusFailed:
		o.sum.Failed = 1
	default:
		o.sum.Fired = 1
		if fd.Run.Status == trigger.StatusFallback {
			o.sum.Fallbacks = 1
		}
	}
	return o
}

// indexSlot is the slot of a due trigger as the index's copy gives it, for
// the lag of one the firing did not judge (left due, or not judged as far
// as its slot): the minute at itself, the latest its slot can be, when the
// copy does not decode or its schedule does not parse.
func indexSlot(d store.Due, at time.Time) time.Time {
	if d.Trigger != nil {
		if j, err := slotOf(d.Trigger, at); err == nil {
			return j.slot
		}
	}
	return at
}

// park stops a trigger that a retry cannot mend, counted as failed: seen
// is the trigger as read, whose slot's run records it
// (trigger.Trigger.Parked), nil when it does not decode (store.Table.Park).
func (f *Firing) park(ctx context.Context, id string, seen *trigger.Trigger, code problem.Code, reason string) outcome {
	run := trigger.Run{Status: trigger.StatusFailed, Error: string(code)}
	if seen != nil {
		run = seen.Parked(string(code), f.now())
	}
	o := outcome{
		sum:   Summary{Due: 1, Failed: 1},
		note:  &note{Trigger: id, Outcome: trigger.StatusFailed, Code: string(code), Reason: reason},
		fault: f.Table.Park(ctx, id, seen, run),
	}
	if seen != nil {
		o.slot = seen.NextRunAt
		o.note.Slot = seen.NextRunAt.Format(session.TimeFormat)
	}
	return o
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
