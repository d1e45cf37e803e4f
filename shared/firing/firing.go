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
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/start"
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
			var o outcome
			if tr, o = f.read(ctx, d.ID); tr == nil {
				return o
			}
			strong = true
		}
		if !tr.Active || tr.NextRunAt.After(at) {
			return outcome{}
		}
		j, err := slotOf(tr, at)
		switch {
		case err != nil && !strong:
			tr = nil
			continue
		case err != nil:
			// Stopped on the condition that it is as read: a change may
			// have mended it since.
			if o := f.park(ctx, d.ID, tr, problem.InvalidRequest, "the stored schedule does not parse"); !errors.Is(o.fault, store.ErrTriggerMoved) {
				return o
			}
		default:
			if fd, err := f.run(ctx, policy, j); !errors.Is(err, store.ErrTriggerMoved) {
				return j.outcome(fd, err)
			}
		}
		// Another invocation, a change or a deletion came first, or is
		// under way: give it a moment to land, then judge again.
		if err := problem.Pause(ctx, 5*time.Millisecond, "the firing ran out of time"); err != nil {
			return failure(d.ID, time.Time{}, err)
		}
		tr = nil
	}
	return failure(d.ID, time.Time{}, problem.New(problem.ServiceUnavailable, "the trigger kept changing while it was fired"))
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

// fired is what firing a slot did: the run it recorded, whether the
// slot's ledger row existed already (a duplicate), and the policy's
// choice of the trigger's saved allocation.
type fired struct {
	run       trigger.Run
	duplicate bool
	choice    allocation.Choice
}

// outcome is what firing the slot did: the run fd recorded (the others of
// its count skipped), or the fault err that left the slot due.
func (j slotJob) outcome(fd fired, err error) outcome {
	if err != nil {
		return failure(j.tr.ID, j.slot, err) // the slot stays due, for the retry
	}
	n := &note{Trigger: j.tr.ID, Slot: j.slot.Format(session.TimeFormat), Outcome: fd.run.Status, Code: fd.run.Error, Reason: fd.choice.Fallback.Reason}
	o := outcome{sum: Summary{Due: 1, Skipped: j.count - 1}, note: n, slot: j.slot}
	switch {
	case fd.duplicate:
		o.sum.Duplicates = 1
		n.Outcome = "duplicate"
	case fd.run.Status == trigger.StatusFailed:
		o.sum.Failed = 1
	default:
		o.sum.Fired = 1
		if fd.run.Status == trigger.StatusFallback {
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

// run obtains the session of a trigger's slot, with the allocation the
// policy chose for the trigger once, and records the run: a new session
// is written with the trigger's advance, in one transaction; a replayed
// slot, or one refused, is recorded after it (refused). The error is
// store.ErrTriggerMoved when the trigger changed since it was read, or a
// fault that leaves the slot due.
func (f *Firing) run(ctx context.Context, policy *allocation.Policy, j slotJob) (fired, error) {
	tr := j.tr
	cmd, choice := triggerrun.Command(tr, policy, start.PlatformScheduled, triggerrun.SlotKey(tr.ID, j.slot))
	if err := cmd.Request.Validate(); err != nil {
		return f.refused(ctx, j, choice, err)
	}
	status := triggerrun.Status(choice, nil) // a new session's
	res, err := f.Start.StartBeside(ctx, cmd, &store.Advance{Seen: tr, Slot: j.slot, Status: status, Next: j.next, At: f.now()})
	switch {
	case err == nil && !res.Replayed: // the run went in with the session
		return fired{run: trigger.Run{At: j.slot, SessionID: res.Record.SessionID, Status: status}, choice: choice}, nil
	case err == nil:
		return f.record(ctx, j, fired{run: trigger.Run{At: j.slot, SessionID: res.Record.SessionID,
			Status: triggerrun.Status(choice, res.Record)}, duplicate: true, choice: choice})
	case errors.Is(err, store.ErrTriggerMoved) || problem.CodeOf(err) == problem.ServiceUnavailable:
		return fired{}, err
	}
	return f.refused(ctx, j, choice, err)
}

// refused settles a slot whose start was refused with err. Any ledger row
// for the slot consumes it, whatever the row records: a duplicate, with
// the row's session. Without one, a 4xx consumes the slot as a failed run
// with its code, and anything else leaves it due.
func (f *Firing) refused(ctx context.Context, j slotJob, choice allocation.Choice, err error) (fired, error) {
	seen, rerr := f.slotRow(ctx, j, err)
	switch {
	case rerr != nil:
		return fired{}, rerr
	case seen.Row != nil && !seen.Row.Expired(f.now()):
		rec, err := f.rowSession(ctx, seen)
		if err != nil {
			return fired{}, err // not known what ran: leave the slot due
		}
		return f.record(ctx, j, fired{run: trigger.Run{At: j.slot, SessionID: seen.Row.SessionID, Status: triggerrun.Status(choice, rec)}, duplicate: true, choice: choice})
	}
	code := problem.CodeOf(err)
	if code.Status() >= 500 {
		return fired{}, err // unexpected: leave the slot due
	}
	return f.record(ctx, j, fired{run: trigger.Run{At: j.slot, Status: trigger.StatusFailed, Error: string(code)}, choice: choice})
}

// slotRow is what is known of the slot's ledger row after a start refused
// with err: what the start read, when it judged the row, else the row as
// read now (the start was refused before it judged one, or not started).
func (f *Firing) slotRow(ctx context.Context, j slotJob, err error) (*ledger.Refused, error) {
	if seen, ok := errors.AsType[*ledger.Refused](err); ok {
		return seen, nil
	}
	row, err := f.Table.GetLedger(ctx, j.tr.UserID, triggerrun.SlotKey(j.tr.ID, j.slot))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return &ledger.Refused{Row: row}, nil
}

// rowSession is the session that the slot's ledger row names, as the
// start read it, else as read now: nil when it is gone or does not decode.
func (f *Firing) rowSession(ctx context.Context, seen *ledger.Refused) (*session.Record, error) {
	if seen.SessionRead {
		return seen.Session, nil
	}
	rec, err := f.Table.GetSession(ctx, seen.Row.SessionID)
	var invalid *store.InvalidSessionError
	if errors.Is(err, store.ErrNotFound) || errors.As(err, &invalid) {
		return nil, nil
	}
	return rec, err
}

// record records the run of a slot whose session the start did not write
// with the trigger's advance.
func (f *Firing) record(ctx context.Context, j slotJob, fd fired) (fired, error) {
	fd.run.RecordedAt = f.now()
	return fd, f.Table.RecordRun(ctx, j.tr, fd.run, j.next)
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
