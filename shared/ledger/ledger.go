// Package ledger is the operation ledger of the contract's start route,
// whole: its row (row.go), the seven rules that say what a start with an
// operation key does about the row the key already has (rules.go, pure),
// and the loop that writes a new session with its row, judges the row
// that stands in the way and replaces it (this file), behind the few calls
// it asks of the table (Store). The row's codec is the store's, beside the
// other items'.
package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
)

// Store is what the ledger asks of the table for a start with an
// operation key. The executor (package commit) gives it, bound to what the start's new
// session writes beside it (a slot's advance, a manual run).
type Store interface {
	// Create writes the new session rec with its row, where no row stands
	// (none, or one expired at now). When one stands the error is
	// ErrRowExists, with the row as the refusal found it (nil when the
	// refusal did not carry it).
	Create(ctx context.Context, rec *session.Record, row Row, now time.Time) (*Row, error)
	// Replace writes rec with row in place of old (rule 5), on the
	// condition that old is unchanged: ErrRowExists when it changed.
	Replace(ctx context.Context, rec *session.Record, row Row, old *Row) error
	// Row reads a user's row for a key, strongly consistent; nil when
	// there is none.
	Row(ctx context.Context, userID, key string) (*Row, error)
	// Session reads a session, strongly consistent; nil when there is none.
	Session(ctx context.Context, id string) (*session.Record, error)
}

// ErrRowExists is a write that met a row of the key: it exists and has not
// expired, a concurrent transaction holds it, or, for a replacement, it
// changed since it was read.
var ErrRowExists = errors.New("ledger: the operation key's row exists")

// Start is a start with an operation key as the ledger runs it.
type Start struct {
	// Claim is what it brings to its key's row; Claim.Mine is set by the
	// ledger.
	Claim Claim
	// Key is the operation key.
	Key string
	// New is the session the start writes with the id given: a new one, or
	// the row's for rule 5.
	New func(id string) *session.Record
	// NewID is a new session id.
	NewID func() string
	// Refusal is the start's refusal by checks 3 to 6 (no session is
	// written then): answered only when no row decides first.
	Refusal error
}

// Result is the session a start obtained, new or replayed.
type Result struct {
	Record   *session.Record
	Replayed bool
}

// Refused is a start refused once the key's row was judged (by a rule,
// or by checks 3 to 6 when no row stood in the way), with what the start
// read, so that a caller to whom any row of the key matters (the firing: a
// row consumes its slot) need not read it again. It unwraps to the
// refusal: problem.CodeOf and the answer are the refusal's.
type Refused struct {
	Err error
	// ByRow says that the key's row decided the answer (rules 1 to 4 and
	// 6, or rule 7 finding its session gone): no start was judged afresh.
	// Otherwise checks 3 to 6 refused a start that no row stood in the way
	// of.
	ByRow bool
	// Row is the key's row as judged (an expired one counts as none); nil
	// when the key had none.
	Row *Row
	// SessionRead says whether the row's session was read, and Session is
	// that session as read: nil when it does not exist.
	SessionRead bool
	Session     *session.Record
}

func (e *Refused) Error() string { return e.Err.Error() }

func (e *Refused) Unwrap() error { return e.Err }

// maxRounds bounds how often a start judges again a row that others keep
// changing under it.
const maxRounds = 4

// busy is the detail of a start whose key others keep changing.
const busy = "The operation key is busy. Try again shortly."

// Run obtains the session of a start: a new one written with its row, or
// what the rules say about the row that stands in the way, round after
// round while others keep changing the row. Errors of st pass as they
// came.
func Run(ctx context.Context, st Store, s Start) (*Result, error) {
	for range maxRounds {
		res, err := round(ctx, st, s)
		if res != nil || !errors.Is(err, errAgain) {
			return res, err
		}
		if err := problem.Pause(ctx, 10*time.Millisecond, busy); err != nil {
			return nil, err
		}
	}
	return nil, problem.New(problem.ServiceUnavailable, busy)
}

// Answer is what the key's row says to a start that writes nothing (a
// webhook redelivery, whose key already has its run): the row is read
// and judged by the rules Run judges a row with, as AnyRequest asks
// (rules 1 to 3, then rule 7 with the row's session). It is nil and no
// error when no live row stands (none, or an expired one); else the
// replayed session, or the refusal as a *Refused.
func Answer(ctx context.Context, st Store, c Claim, key string) (*Result, error) {
	c.AnyRequest = true
	r, err := judge(ctx, st, Start{Claim: c, Key: key}, nil, nil)
	switch {
	case err != nil:
		return nil, err
	case r.Step == Replay:
		return &Result{Record: r.rec, Replayed: true}, nil
	case r.Step == Refuse:
		return nil, r.refused(r.Err, true)
	}
	return nil, nil // Create: no live row
}

// errAgain is a round that met a row others were changing: judge again,
// after a short pause.
var errAgain = errors.New("ledger: the row changed under the start")

// round is one try: write the session with a new row (unless checks 3 to
// 6 refused the start), then judge the row that refused the write, and do
// what the rules say.
func round(ctx context.Context, st Store, s Start) (*Result, error) {
	var mine *session.Record
	var row *Row
	if s.Refusal == nil {
		mine = s.New(s.NewID())
		var err error
		if row, err = st.Create(ctx, mine, newRow(s, mine), s.Claim.Now); !errors.Is(err, ErrRowExists) {
			if err != nil {
				return nil, err
			}
			return &Result{Record: mine}, nil
		}
	}
	r, err := judge(ctx, st, s, mine, row)
	switch {
	case err != nil:
		return nil, err
	case r.Step == Own:
		return &Result{Record: mine}, nil
	case r.Step == Replay:
		return &Result{Record: r.rec, Replayed: true}, nil
	case r.Step == Refuse:
		return nil, r.refused(r.Err, true)
	case s.Refusal != nil: // Create or Afresh: a new session, which checks 3 to 6 refused
		return nil, r.refused(s.Refusal, false)
	case r.Step == Create:
		return nil, errAgain // the row expired, or a concurrent transaction held it and has not written it
	}
	// Afresh: with the row's session id, replacing the row if unchanged.
	rec := s.New(r.row.SessionID)
	switch err := st.Replace(ctx, rec, newRow(s, rec), r.row); {
	case errors.Is(err, ErrRowExists):
		return nil, errAgain // someone else moved first
	case err != nil:
		return nil, err
	}
	return &Result{Record: rec}, nil
}

// ruling is the rules' verdict on a row, with the row judged and, when it
// read that row's session (read), the session: nil when it does not exist.
type ruling struct {
	Verdict
	row  *Row
	read bool
	rec  *session.Record
}

// refused is the start refused with err once r was ruled, with what the
// ruling read; byRow when the ruling itself is the refusal.
func (r ruling) refused(err error, byRow bool) error {
	return &Refused{Err: err, ByRow: byRow, Row: r.row, SessionRead: r.read, Session: r.rec}
}

// judge rules on the row that refused the start's write (nil when the
// refusal did not carry it, or nothing was written: it is read then),
// with the reads the rules ask for: the row's session, and, when rule 5
// finds it, the row again, since a concurrent start may have replaced the
// row with that very session since it was read; then the new row is the
// one judged.
func judge(ctx context.Context, st Store, s Start, mine *session.Record, row *Row) (ruling, error) {
	c := s.Claim
	if mine != nil {
		c.Mine = mine.SessionID
	}
	var err error
	if row == nil {
		// The ledger comes before checks 3 to 6: a start they refused is
		// judged by its key's row, when it has one.
		if row, err = st.Row(ctx, c.UserID, s.Key); err != nil {
			return ruling{}, err
		}
	}
	r, err := judgeRow(ctx, st, c, row)
	if err == nil && r.Step == CheckSession && r.rec != nil { // rule 5 found the session: read the row again
		var fresh *Row
		if fresh, err = st.Row(ctx, c.UserID, s.Key); err == nil && Replaced(row, fresh, c.Now) {
			r, err = judgeRow(ctx, st, c, fresh)
		}
	}
	if err != nil || r.Step != CheckSession && r.Step != ReadSession {
		return r, err
	}
	r.Verdict = JudgeSession(r.row, c, r.rec)
	return r, nil
}

// judgeRow is the rules' verdict on a row, with the row's session read
// when the verdict asks for it.
func judgeRow(ctx context.Context, st Store, c Claim, row *Row) (ruling, error) {
	r := ruling{Verdict: Judge(row, c), row: row}
	if r.Step != CheckSession && r.Step != ReadSession {
		return r, nil
	}
	rec, err := st.Session(ctx, row.SessionID)
	if err != nil {
		return ruling{}, err
	}
	r.rec, r.read = rec, true
	return r, nil
}

// newRow is the row a start writes with its session rec: completed.
func newRow(s Start, rec *session.Record) Row {
	c := s.Claim
	return Row{
		UserID: c.UserID, OperationKey: s.Key, Intent: IntentCreateSession,
		OrgID: c.OrgID, BotID: c.BotID, Fingerprint: c.Fingerprint, Status: StatusCompleted,
		SessionID: rec.SessionID, SandboxID: rec.Sandbox.ID, SandboxKind: string(rec.Sandbox.Kind),
		SandboxProvider: string(rec.Sandbox.Provider), SandboxAllocation: rec.Sandbox.Allocation.Name(),
		CreatedAt: c.Now.UTC().Format(session.TimeFormat), ExpiresAt: c.Now.Add(TTL),
	}
}
