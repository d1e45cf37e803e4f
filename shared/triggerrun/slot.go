package triggerrun

import (
	"context"
	"errors"
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/start"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// Slot is a trigger's slot to fire: the trigger as it was judged, the
// slot, its schedule's next time after the slot, and the time it is fired
// at (its run's record).
type Slot struct {
	Trigger       *trigger.Trigger
	At, Next, Now time.Time
	// Environments are what the firing read for its due triggers' starts;
	// what they do not cover is read for the slot.
	Environments *environment.Found
}

// Fired is what firing a slot did: the run it recorded, whether the
// slot's ledger row existed already (a duplicate), and the policy's
// choice of the trigger's saved allocation.
type Fired struct {
	Run       trigger.Run
	Duplicate bool
	Choice    allocation.Choice
}

// StartSlot obtains the session of a trigger's slot, created on
// scheduled with the slot's operation key (SlotKey), with the allocation
// the policy chose, and records the slot's run: a new session is written
// with the trigger's advance, in one transaction; a replayed slot, or one
// refused, is recorded after it (refusedSlot). The error is
// store.ErrTriggerMoved when the trigger changed since it was read, or a
// fault that leaves the slot due.
func (r *Runner) StartSlot(ctx context.Context, policy *allocation.Policy, s Slot) (Fired, error) {
	tr := s.Trigger
	found, err := r.environments(ctx, tr, s.Environments, start.PlatformScheduled)
	if err != nil {
		return Fired{}, err
	}
	cmd, choice := Command(tr, policy, found, start.PlatformScheduled, SlotKey(tr.ID, s.At))
	if err := cmd.Request.Validate(); err != nil {
		return r.refusedSlot(ctx, s, choice, ledger.RefusedWith(err), err)
	}
	status := Status(choice, nil) // a new session's
	out, err := r.Start.StartBeside(ctx, cmd, &store.Advance{Seen: tr, Run: trigger.Run{At: s.At, Status: status, RecordedAt: s.Now}, Next: s.Next})
	switch {
	case errors.Is(err, store.ErrTriggerMoved) || problem.CodeOf(err) == problem.ServiceUnavailable:
		return Fired{}, err
	case err != nil:
		return r.refusedSlot(ctx, s, choice, ledger.Outcome{}, err)
	case out.Kind == ledger.Started: // the run went in with the session
		return Fired{Run: trigger.Run{At: s.At, SessionID: out.Record.SessionID, Status: status}, Choice: choice}, nil
	case out.Kind == ledger.Replayed:
		return r.record(ctx, s, Fired{Run: trigger.Run{At: s.At, SessionID: out.Record.SessionID,
			Status: Status(choice, out.Record)}, Duplicate: true, Choice: choice})
	}
	return r.refusedSlot(ctx, s, choice, out, out.Refusal)
}

// refusedSlot settles a slot whose start was refused (out), or failed
// with err (out none). Any ledger row for the slot consumes it, whatever
// the row records: a duplicate, with the row's session. Without one, a
// refusal that Failed counts consumes the slot as a failed run with its
// code, and anything else leaves it due.
func (r *Runner) refusedSlot(ctx context.Context, s Slot, choice allocation.Choice, out ledger.Outcome, err error) (Fired, error) {
	seen, rerr := r.slotRow(ctx, s, out)
	switch {
	case rerr != nil:
		return Fired{}, rerr
	case seen.Row != nil && !seen.Row.Expired(s.Now):
		rec, err := r.rowSession(ctx, seen)
		if err != nil {
			return Fired{}, err // not known what ran: leave the slot due
		}
		return r.record(ctx, s, Fired{Run: trigger.Run{At: s.At, SessionID: seen.Row.SessionID, Status: Status(choice, rec)}, Duplicate: true, Choice: choice})
	}
	code, failed := Failed(out)
	if !failed {
		return Fired{}, err // unexpected: leave the slot due
	}
	return r.record(ctx, s, Fired{Run: trigger.Run{At: s.At, Status: trigger.StatusFailed, Error: string(code)}, Choice: choice})
}

// slotRow is what is known of the slot's ledger row after a start came to
// out: what the start read, when it judged the row, else the row as read
// now (the start was refused before it judged one, or not started).
func (r *Runner) slotRow(ctx context.Context, s Slot, out ledger.Outcome) (ledger.Outcome, error) {
	if out.RowRead {
		return out, nil
	}
	row, err := r.Table.GetLedger(ctx, s.Trigger.UserID, SlotKey(s.Trigger.ID, s.At))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return ledger.Outcome{}, err
	}
	return ledger.Outcome{RowRead: true, Row: row}, nil
}

// rowSession is the session that the slot's ledger row names, as the
// start read it, else as read now: nil when it is gone or does not decode.
func (r *Runner) rowSession(ctx context.Context, seen ledger.Outcome) (*session.Record, error) {
	if seen.SessionRead {
		return seen.Session, nil
	}
	rec, err := r.Table.GetSession(ctx, seen.Row.SessionID)
	var invalid *store.InvalidSessionError
	if errors.Is(err, store.ErrNotFound) || errors.As(err, &invalid) {
		return nil, nil
	}
	return rec, err
}

// record records the run of a slot whose session the start did not write
// with the trigger's advance.
func (r *Runner) record(ctx context.Context, s Slot, fd Fired) (Fired, error) {
	fd.Run.RecordedAt = s.Now
	return fd, r.Table.RecordRun(ctx, s.Trigger, fd.Run, s.Next)
}
