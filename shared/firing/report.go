package firing

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// maxNotes bounds the triggers named in an invocation's log line,
// maxFaults the faults its line and its error name, and maxFaultText, in
// characters, the text of each fault, so that a burst of faults (a
// storage outage) keeps the line far under CloudWatch Logs' 256 KB per
// event, past which the line, and the metrics it carries, are lost. The
// line counts the rest.
const (
	maxNotes     = 100
	maxFaults    = 20
	maxFaultText = 500
)

// The metrics of every invocation, by Function: the summary's members
// (TimedOut its sweep's marks), and
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
	MetricTimedOut   = "TimedOut"
	MetricFiringLag  = "FiringLag"
)

// Summary is what one invocation did; Due = Fired + Duplicates + Failed.
// TimedOut counts the sessions its sweep marked timed_out.
type Summary struct {
	Due        int `json:"due"`
	Fired      int `json:"fired"`
	Duplicates int `json:"duplicates"`
	Skipped    int `json:"skipped"`
	Fallbacks  int `json:"fallbacks"`
	Failed     int `json:"failed"`
	TimedOut   int `json:"timedOut"`
}

func (s *Summary) add(o Summary) {
	s.Due += o.Due
	s.Fired += o.Fired
	s.Duplicates += o.Duplicates
	s.Skipped += o.Skipped
	s.Fallbacks += o.Fallbacks
	s.Failed += o.Failed
	s.TimedOut += o.TimedOut
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
	if o.fault == nil {
		inv.lag = max(inv.lag, settled.Sub(o.slot))
		return
	}
	inv.keep(o.fault)
	inv.wait(o.slot)
}

// swept adds a step of the sweep: a session marked, or not; its fault
// (nil for none).
func (inv *tally) swept(marked bool, fault error) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if marked {
		inv.TimedOut++
	}
	if fault != nil {
		inv.keep(fault)
	}
}

// keep keeps a fault for the line and the error, up to maxFaults, and
// counts the rest; under the lock.
func (inv *tally) keep(fault error) {
	if len(inv.faults) < maxFaults {
		inv.faults = append(inv.faults, fault)
	} else {
		inv.moreFaults++
	}
}

// err is the invocation's error, nil when no fault left a slot due or a
// session unmarked.
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
		invocation.Count(MetricTimedOut, inv.TimedOut),
		{Name: MetricFiringLag, Unit: invocation.UnitSeconds, Value: inv.lag.Round(time.Millisecond).Seconds()},
	}
}

// failure is a trigger whose slot (zero when not known) a fault left due.
func failure(id string, slot time.Time, err error) outcome {
	n := &note{Trigger: id, Outcome: trigger.StatusFailed, Code: string(problem.CodeOf(err))}
	if !slot.IsZero() {
		n.Slot = slot.Format(session.TimeFormat)
	}
	return outcome{sum: Summary{Due: 1, Failed: 1}, note: n, slot: slot, fault: err}
}
