// Package firing fires due scheduled triggers: every minute it finds them
// in the due index, takes each one's slot, and starts its session through
// the start service, once per trigger and slot, a bounded number at a time.
package firing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
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
	"github.com/cloud-agent/control-plane/shared/trigger"
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
	// maxNotes bounds the triggers named in an invocation's log line.
	maxNotes = 100
	// maxJudgements bounds how often one trigger is judged again after it
	// changed under the firing's write.
	maxJudgements = 3
	// defaultConcurrency is how many due triggers fire at a time when
	// FIRING_CONCURRENCY is not set.
	defaultConcurrency = 32
)

// VarConcurrency is the environment variable that bounds how many due
// triggers an invocation fires at a time (template.yaml sets it).
const VarConcurrency = "FIRING_CONCURRENCY"

// MaxConcurrency bounds FIRING_CONCURRENCY: the functions keep as many
// idle connections to an endpoint (lambdaenv).
const MaxConcurrency = 256

// ParseConcurrency reads FIRING_CONCURRENCY: a whole number from 1 to
// MaxConcurrency, defaultConcurrency when empty.
func ParseConcurrency(s string) (int, error) {
	if s == "" {
		return defaultConcurrency, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxConcurrency {
		return 0, fmt.Errorf("%s must be a whole number from 1 to %d, not %q", VarConcurrency, MaxConcurrency, s)
	}
	return n, nil
}

// Summary is what one invocation did; Due = Fired + Duplicates + Failed.
type Summary struct {
	Due        int `json:"due"`
	Fired      int `json:"fired"`
	Duplicates int `json:"duplicates"`
	Skipped    int `json:"skipped"`
	Fallbacks  int `json:"fallbacks"`
	Failed     int `json:"failed"`
}

func (s *Summary) add(o Summary) {
	s.Due += o.Due
	s.Fired += o.Fired
	s.Duplicates += o.Duplicates
	s.Skipped += o.Skipped
	s.Fallbacks += o.Fallbacks
	s.Failed += o.Failed
}

// Firing starts the sessions of due triggers through the start service,
// once per trigger and slot.
type Firing struct {
	Table    *store.Table
	Settings *settings.Settings
	Start    *start.Service
	Log      *slog.Logger
	// Concurrency bounds how many due triggers fire at a time
	// (defaultConcurrency when 0; 1 fires them one at a time).
	Concurrency int
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

// outcome is what firing one trigger did: its part of the summary, its
// note (none when it was not due after all), and a fault that left its
// slot due.
type outcome struct {
	sum   Summary
	note  *note
	fault error
}

// tally is what one invocation did: its summary and the notes and
// attributes of its one log line. Triggers firing at once add to it under
// its lock.
type tally struct {
	mu sync.Mutex
	Summary
	notes  []note
	faults []error
	attrs  []slog.Attr
}

func (inv *tally) add(o outcome) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.Summary.add(o.sum)
	if o.note != nil && len(inv.notes) < maxNotes {
		inv.notes = append(inv.notes, *o.note)
	}
	if o.fault != nil {
		inv.faults = append(inv.faults, o.fault)
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
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-lastWord))
		defer cancel()
	}
	due, err := f.Table.DueTriggers(ctx, at)
	if err != nil || len(due) == 0 {
		return err
	}
	policy, err := f.Settings.Policy(ctx) // one policy for every trigger
	if err != nil {
		inv.Due += len(due) // as the index has them: all left due
		inv.Failed += len(due)
		return err
	}
	// Workers take the triggers longest due first, each to its end; none
	// is taken once the reserve before the timeout has begun. An index
	// entry that did not decode is read again (fireOne); the line counts
	// those taken.
	var mu sync.Mutex
	taken, undecoded := 0, 0
	take := func() (store.Due, bool) {
		mu.Lock()
		defer mu.Unlock()
		if taken == len(due) || !stop.IsZero() && !time.Now().Before(stop) {
			return store.Due{}, false
		}
		taken++
		if due[taken-1].Trigger == nil {
			undecoded++
		}
		return due[taken-1], true
	}
	var wg sync.WaitGroup
	for range min(f.concurrency(), len(due)) {
		wg.Go(func() {
			for d, ok := take(); ok; d, ok = take() {
				inv.add(f.fireOne(ctx, policy, d, at))
			}
		})
	}
	wg.Wait()
	if left := len(due) - taken; left > 0 {
		inv.attrs = append(inv.attrs, slog.Int("leftDue", left))
	}
	if undecoded > 0 {
		invocation.Warn(ctx, fmt.Sprintf("due-index entries that did not decode, each read again: %d", undecoded))
	}
	return errors.Join(inv.faults...)
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
// strongly consistent, and judged again; what is not conditioned (stopping
// a trigger that cannot fire) is decided on a strong read only.
func (f *Firing) fireOne(ctx context.Context, policy *allocation.Policy, d store.Due, at time.Time) outcome {
	tr, strong := d.Trigger, false
	for range maxJudgements {
		if tr == nil {
			var err error
			tr, err = f.Table.GetTrigger(ctx, d.ID)
			strong = true
			var broken *store.InvalidTriggerError
			switch {
			case errors.Is(err, store.ErrNotFound):
				return outcome{}
			case errors.As(err, &broken):
				return f.park(ctx, d.ID, problem.InternalError, "the stored trigger does not decode")
			case err != nil:
				return failure(d.ID, "", err)
			}
		}
		if !tr.Active || tr.NextRunAt.After(at) {
			return outcome{}
		}
		sched, err := trigger.ParseSchedule(tr.Cron, tr.Timezone, at)
		if err != nil && !strong {
			tr = nil
			continue
		}
		if err != nil {
			return f.park(ctx, d.ID, problem.InvalidRequest, "the stored schedule does not parse")
		}
		slot, count := sched.Latest(tr.NextRunAt, at)
		if slot.IsZero() {
			// nextRunAt is no slot of the schedule (an older writer's, or a
			// hand's): the slot is still the latest at or before the minute.
			if slot, _ = sched.Latest(at.AddDate(-5, 0, 0), at); slot.IsZero() {
				slot = tr.NextRunAt
			}
			count = 1
		}
		run, duplicate, reason, err := f.run(ctx, policy, tr, slot, sched.Next(slot))
		if errors.Is(err, store.ErrTriggerMoved) {
			// Another invocation, a change or a deletion came first, or is
			// under way: give it a moment to land, then judge again.
			if err := pause(ctx); err != nil {
				return failure(d.ID, "", err)
			}
			tr = nil
			continue
		}
		n := &note{Trigger: d.ID, Slot: slot.Format(session.TimeFormat), Outcome: run.Status, Code: run.Error, Reason: reason}
		o := outcome{sum: Summary{Due: 1}, note: n}
		switch {
		case err != nil:
			// The slot stays due, for the retry.
			return failure(d.ID, n.Slot, err)
		case duplicate:
			o.sum.Duplicates = 1
			n.Outcome = "duplicate"
		case run.Status == trigger.StatusFailed:
			o.sum.Failed = 1
		default:
			o.sum.Fired = 1
			if run.Status == trigger.StatusFallback {
				o.sum.Fallbacks = 1
			}
		}
		o.sum.Skipped = count - 1
		return o
	}
	return failure(d.ID, "", problem.New(problem.ServiceUnavailable, "the trigger kept changing while it was fired"))
}

// pause waits a short random while before a trigger that moved under a
// write is read again, so that a transaction in flight on it can finish.
func pause(ctx context.Context) error {
	select {
	case <-time.After(5*time.Millisecond + rand.N(20*time.Millisecond)):
		return nil
	case <-ctx.Done():
		return problem.Wrap(problem.ServiceUnavailable, "the firing ran out of time", ctx.Err())
	}
}

// failure is a trigger whose slot a fault left due.
func failure(id, slot string, err error) outcome {
	return outcome{
		sum:   Summary{Due: 1, Failed: 1},
		note:  &note{Trigger: id, Slot: slot, Outcome: trigger.StatusFailed, Code: string(problem.CodeOf(err))},
		fault: err,
	}
}

// park stops a trigger that a retry cannot mend, counted as failed.
func (f *Firing) park(ctx context.Context, id string, code problem.Code, reason string) outcome {
	return outcome{
		sum:   Summary{Due: 1, Failed: 1},
		note:  &note{Trigger: id, Outcome: trigger.StatusFailed, Code: string(code), Reason: reason},
		fault: f.Table.Park(ctx, id, string(code)),
	}
}

// run obtains the session of a trigger's slot and records the run: a new
// session is written with the trigger's advance, in one transaction; a
// replayed slot, or one refused with a 4xx, is recorded after it. It says
// what was recorded, whether the slot's ledger row existed already, and why
// a saved allocation fell back. The error is store.ErrTriggerMoved when the
// trigger changed since tr was read, or a fault that leaves the slot due.
func (f *Firing) run(ctx context.Context, policy *allocation.Policy, tr *trigger.Trigger, slot, next time.Time) (run trigger.Run, duplicate bool, reason string, err error) {
	saved, fb, err := policy.Saved(tr.SavedAllocation, tr.SavedRequest, allocation.Owner(tr.UserID, tr.OrgID))
	reason = fb.Reason
	if err != nil {
		return trigger.Run{}, false, "", err // no usable default
	}
	status := statusOf(tr, saved) // what a new session will run on
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
			Advance: &store.Advance{Seen: tr, Slot: slot, Status: status, Next: next},
		})
	}
	code := problem.CodeOf(err)
	switch {
	case err == nil && !res.Replayed:
		// New: the run went in with the session.
		return trigger.Run{At: slot, SessionID: res.Record.SessionID, Status: status}, false, reason, nil
	case err == nil:
		run = trigger.Run{At: slot, SessionID: res.Record.SessionID, Status: statusOf(tr, res.Record.Allocation())}
		return run, true, reason, f.Table.RecordRun(ctx, tr, run, next)
	case errors.Is(err, store.ErrTriggerMoved) || code == problem.ServiceUnavailable:
		return trigger.Run{}, false, reason, err
	}
	// Any ledger row for the slot consumes it, whatever it records.
	row, rerr := f.Table.GetLedger(ctx, tr.UserID, req.OperationKey)
	switch {
	case rerr == nil && !row.Expired(f.now()):
		run = trigger.Run{At: slot, SessionID: row.SessionID, Status: trigger.StatusFired}
		if rec, err := f.Table.GetSession(ctx, row.SessionID); err == nil {
			run.Status = statusOf(tr, rec.Allocation())
		} else if reason != "" {
			run.Status = trigger.StatusFallback
		}
		return run, true, reason, f.Table.RecordRun(ctx, tr, run, next)
	case rerr != nil && !errors.Is(rerr, store.ErrNotFound):
		return trigger.Run{}, false, reason, rerr
	case code.Status() >= 500:
		return trigger.Run{}, false, reason, err // unexpected: leave the slot due
	}
	run = trigger.Run{At: slot, Status: trigger.StatusFailed, Error: string(code)}
	return run, false, reason, f.Table.RecordRun(ctx, tr, run, next)
}

// statusOf is the status of a slot whose session runs on a: a fallback
// when the trigger saved an allocation and the session does not run on it.
func statusOf(tr *trigger.Trigger, a allocation.Allocation) string {
	var saved allocation.Allocation
	switch {
	case tr.SavedRequest != nil:
		saved, _ = allocation.FromRequest(*tr.SavedRequest)
	case tr.SavedAllocation != "":
		saved, _ = allocation.ByName(tr.SavedAllocation)
	default:
		return trigger.StatusFired
	}
	if saved.IsZero() || saved.String() != a.String() {
		return trigger.StatusFallback
	}
	return trigger.StatusFired
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
