// Package firing fires due scheduled triggers: every minute it finds them
// in the due index, takes each one's slot, and starts its session through
// the start service, once per trigger and slot, a bounded number at a time.
package firing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
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
	// maxNotes bounds the triggers named in an invocation's log line,
	// maxFaults the faults its line and its error name, and maxFaultText,
	// in characters, the text of each fault, so that a burst of faults
	// (a storage outage) keeps the line far under CloudWatch Logs' 256 KB
	// per event, past which the line, and the metrics it carries, are lost.
	// The line counts the rest.
	maxNotes     = 100
	maxFaults    = 20
	maxFaultText = 500
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

// The metrics of every invocation, by Function: the summary's members, and
// FiringLag, in seconds, the largest over the invocation's due triggers of
// the time from the trigger's slot to when the firing settled it (its run
// recorded, or the trigger stopped), or, for a trigger left due, to the end
// of the invocation; 0 when nothing was due.
const (
	MetricDue        = "Due"
	MetricFired      = "Fired"
	MetricDuplicates = "Duplicates"
	MetricSkipped    = "Skipped"
	MetricFallbacks  = "Fallbacks"
	MetricFailed     = "Failed"
	MetricFiringLag  = "FiringLag"
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
	// Metrics is the execution environment's; nil logs no metrics.
	Metrics *invocation.Metrics
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
// note (none when it was not due after all), the slot it judged (zero when
// it did not get so far), and a fault that left its slot due.
type outcome struct {
	sum   Summary
	note  *note
	slot  time.Time
	fault error
}

// tally is what one invocation did: its summary, its lag, and the notes,
// faults and attributes of its one log line, the notes and faults up to
// their bounds and the rest counted. Triggers firing at once add to it
// under its lock.
type tally struct {
	mu sync.Mutex
	Summary
	notes      []note
	moreNotes  int
	faults     []error
	moreFaults int
	attrs      []slog.Attr
	// lag is the largest lag of a trigger settled so far; waiting is the
	// earliest slot of a trigger left due (zero for none), whose lag runs
	// to the end of the invocation.
	lag     time.Duration
	waiting time.Time
}

// add adds the outcome of a due trigger settled (or left due by a fault)
// at settled.
func (inv *tally) add(o outcome, settled time.Time) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.Summary.add(o.sum)
	switch {
	case o.note == nil: // not due after all
		return
	case len(inv.notes) < maxNotes:
		inv.notes = append(inv.notes, *o.note)
	default:
		inv.moreNotes++
	}
	switch {
	case o.fault == nil:
		inv.lag = max(inv.lag, settled.Sub(o.slot))
		return
	case len(inv.faults) < maxFaults:
		inv.faults = append(inv.faults, o.fault)
	default:
		inv.moreFaults++
	}
	inv.wait(o.slot)
}

// err is the invocation's error, nil when no fault left a slot due.
func (inv *tally) err() error {
	if len(inv.faults) == 0 {
		return nil
	}
	return &faultsError{inv.faults, inv.moreFaults}
}

// faultsError is the error of an invocation whose faults left slots due:
// the text of each of the first, cut to maxFaultText characters, one a
// line, then how many more there were.
type faultsError struct {
	first []error
	more  int
}

func (e *faultsError) Error() string {
	var b strings.Builder
	for i, err := range e.first {
		if i > 0 {
			b.WriteByte('\n')
		}
		text := err.Error()
		if r := []rune(text); len(r) > maxFaultText {
			text = string(r[:maxFaultText]) + "…"
		}
		b.WriteString(text)
	}
	if e.more > 0 {
		fmt.Fprintf(&b, "\nand %d more faults", e.more)
	}
	return b.String()
}

func (e *faultsError) Unwrap() []error { return e.first }

// wait counts a trigger of that slot as left due.
func (inv *tally) wait(slot time.Time) {
	if inv.waiting.IsZero() || slot.Before(inv.waiting) {
		inv.waiting = slot
	}
}

// end ends the invocation at now: the triggers left due count their lag
// until then.
func (inv *tally) end(now time.Time) {
	if !inv.waiting.IsZero() {
		inv.lag = max(inv.lag, now.Sub(inv.waiting))
	}
}

// metrics are the invocation's metrics: the summary's members and the lag.
func (inv *tally) metrics() []invocation.Metric {
	return []invocation.Metric{
		invocation.Count(MetricDue, inv.Due), invocation.Count(MetricFired, inv.Fired),
		invocation.Count(MetricDuplicates, inv.Duplicates), invocation.Count(MetricSkipped, inv.Skipped),
		invocation.Count(MetricFallbacks, inv.Fallbacks), invocation.Count(MetricFailed, inv.Failed),
		{Name: MetricFiringLag, Unit: invocation.UnitSeconds, Value: inv.lag.Round(time.Millisecond).Seconds()},
	}
}

// Handle answers one scheduled event. It returns an error, so that Lambda
// retries the event, only when a retry could help: a storage or settings
// fault left a slot due; the error names the first maxFaults faults and
// counts the rest. It logs one JSON line, with the summary and the lag as
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
		for _, d := range due {
			inv.wait(indexSlot(d, at))
		}
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
				o := f.fireOne(ctx, policy, d, at)
				if o.note != nil && o.slot.IsZero() {
					o.slot = indexSlot(d, at)
				}
				inv.add(o, f.now())
			}
		})
	}
	wg.Wait()
	if left := len(due) - taken; left > 0 {
		inv.attrs = append(inv.attrs, slog.Int("leftDue", left))
		for _, d := range due[taken:] {
			inv.wait(indexSlot(d, at))
		}
	}
	if undecoded > 0 {
		invocation.Warn(ctx, fmt.Sprintf("due-index entries that did not decode, each read again: %d", undecoded))
	}
	return inv.err()
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
				return f.park(ctx, d.ID, nil, problem.InternalError, "the stored trigger does not decode")
			case err != nil:
				return failure(d.ID, time.Time{}, err)
			}
		}
		if !tr.Active || tr.NextRunAt.After(at) {
			return outcome{}
		}
		slot, next, count, err := slotOf(tr, at)
		if err != nil && !strong {
			tr = nil
			continue
		}
		if err != nil {
			// Stopped on the condition that it is as read: a change may
			// have mended it since.
			if o := f.park(ctx, d.ID, tr, problem.InvalidRequest, "the stored schedule does not parse"); !errors.Is(o.fault, store.ErrTriggerMoved) {
				return o
			}
		} else if run, duplicate, reason, err := f.run(ctx, policy, tr, slot, next); !errors.Is(err, store.ErrTriggerMoved) {
			return outcomeOf(d.ID, slot, count, run, duplicate, reason, err)
		}
		// Another invocation, a change or a deletion came first, or is
		// under way: give it a moment to land, then judge again.
		if err := store.Pause(ctx, 5*time.Millisecond, "the firing ran out of time"); err != nil {
			return failure(d.ID, time.Time{}, err)
		}
		tr = nil
	}
	return failure(d.ID, time.Time{}, problem.New(problem.ServiceUnavailable, "the trigger kept changing while it was fired"))
}

// outcomeOf is what firing a trigger's slot did: the run it recorded, of
// count slots due (the others skipped), or the fault that left it due.
func outcomeOf(id string, slot time.Time, count int, run trigger.Run, duplicate bool, reason string, err error) outcome {
	if err != nil {
		return failure(id, slot, err) // the slot stays due, for the retry
	}
	n := &note{Trigger: id, Slot: slot.Format(session.TimeFormat), Outcome: run.Status, Code: run.Error, Reason: reason}
	o := outcome{sum: Summary{Due: 1, Skipped: count - 1}, note: n, slot: slot}
	switch {
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
	return o
}

// slotOf is the slot of a trigger due at the minute at, the latest time of
// its schedule at or before at; the schedule's next time after it; and how
// many of the trigger's slots it stands for (the others are skipped).
func slotOf(tr *trigger.Trigger, at time.Time) (slot, next time.Time, count int, err error) {
	sched, err := trigger.ParseSchedule(tr.Cron, tr.Timezone, at)
	if err != nil {
		return time.Time{}, time.Time{}, 0, err
	}
	slot, count = sched.Latest(tr.NextRunAt, at)
	if slot.IsZero() {
		// nextRunAt is no slot of the schedule (an older writer's, or a
		// hand's): the slot is still the latest at or before the minute.
		if slot, _ = sched.Latest(at.AddDate(-5, 0, 0), at); slot.IsZero() {
			slot = tr.NextRunAt
		}
		count = 1
	}
	return slot, sched.Next(slot), count, nil
}

// indexSlot is the slot of a due trigger as the index's copy gives it, for
// the lag of one the firing did not judge (left due, or not judged as far
// as its slot): the minute at itself, the latest its slot can be, when the
// copy does not decode or its schedule does not parse.
func indexSlot(d store.Due, at time.Time) time.Time {
	if d.Trigger != nil {
		if slot, _, _, err := slotOf(d.Trigger, at); err == nil {
			return slot
		}
	}
	return at
}

// failure is a trigger whose slot (zero when not known) a fault left due.
func failure(id string, slot time.Time, err error) outcome {
	n := &note{Trigger: id, Outcome: trigger.StatusFailed, Code: string(problem.CodeOf(err))}
	if !slot.IsZero() {
		n.Slot = slot.Format(session.TimeFormat)
	}
	return outcome{sum: Summary{Due: 1, Failed: 1}, note: n, slot: slot, fault: err}
}

// park stops a trigger that a retry cannot mend, counted as failed: seen
// is the trigger as read, nil when it does not decode (store.Table.Park).
func (f *Firing) park(ctx context.Context, id string, seen *trigger.Trigger, code problem.Code, reason string) outcome {
	o := outcome{
		sum:   Summary{Due: 1, Failed: 1},
		note:  &note{Trigger: id, Outcome: trigger.StatusFailed, Code: string(code), Reason: reason},
		fault: f.Table.Park(ctx, id, string(code), seen, f.now()),
	}
	if seen != nil {
		o.slot = seen.NextRunAt
		o.note.Slot = seen.NextRunAt.Format(session.TimeFormat)
	}
	return o
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
		OperationKey: start.SlotKey(tr.ID, slot),
		OrgID:        tr.OrgID, Repository: tr.Repository, Agent: tr.Agent,
		Prompt: &prompt, CreatedOnPlatform: start.PlatformScheduled,
	}
	var res *start.Result
	// A stored trigger holds what its route validated; one that no longer
	// passes (an older writer's) is refused like a bad request.
	if err = req.Validate(); err == nil {
		res, err = f.Start.StartSlot(ctx, start.Command{
			UserID: tr.UserID, Request: req, Allocation: saved, Policy: policy, // the trigger's user and org, never a bot
		}, store.Advance{Seen: tr, Slot: slot, Status: status, Next: next, At: f.now()})
	}
	code := problem.CodeOf(err)
	switch {
	case err == nil && !res.Replayed:
		// New: the run went in with the session.
		return trigger.Run{At: slot, SessionID: res.Record.SessionID, Status: status}, false, reason, nil
	case err == nil:
		run = trigger.Run{At: slot, SessionID: res.Record.SessionID, Status: statusOf(tr, res.Record.Allocation()), RecordedAt: f.now()}
		return run, true, reason, f.Table.RecordRun(ctx, tr, run, next)
	case errors.Is(err, store.ErrTriggerMoved) || code == problem.ServiceUnavailable:
		return trigger.Run{}, false, reason, err
	}
	// Any ledger row for the slot consumes it, whatever it records.
	row, rerr := f.Table.GetLedger(ctx, tr.UserID, req.OperationKey)
	switch {
	case rerr == nil && !row.Expired(f.now()):
		run = trigger.Run{At: slot, SessionID: row.SessionID, Status: trigger.StatusFired, RecordedAt: f.now()}
		rec, err := f.Table.GetSession(ctx, row.SessionID)
		var invalid *session.InvalidRecordError
		switch {
		case err == nil:
			run.Status = statusOf(tr, rec.Allocation())
		case !errors.Is(err, store.ErrNotFound) && !errors.As(err, &invalid):
			return trigger.Run{}, false, reason, err // not known what ran: leave the slot due
		case reason != "":
			run.Status = trigger.StatusFallback // the session is gone or unreadable: as the trigger would run now
		}
		return run, true, reason, f.Table.RecordRun(ctx, tr, run, next)
	case rerr != nil && !errors.Is(rerr, store.ErrNotFound):
		return trigger.Run{}, false, reason, rerr
	case code.Status() >= 500:
		return trigger.Run{}, false, reason, err // unexpected: leave the slot due
	}
	run = trigger.Run{At: slot, Status: trigger.StatusFailed, Error: string(code), RecordedAt: f.now()}
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
