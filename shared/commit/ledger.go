package commit

import (
	"context"
	"errors"
	"time"

	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
)

// rows is what a start with an operation key asks of the table (keyed
// gives it, bound to what the start's new session writes beside it: a
// slot's advance, a manual run).
type rows interface {
	// Create writes the new session rec with its row, where no row stands
	// (none, or one expired at now). When one stands the error is
	// ledger.ErrRowExists, with the row as the refusal found it (nil when the
	// refusal did not carry it).
	Create(ctx context.Context, rec *session.Record, row ledger.Row, now time.Time) (*ledger.Row, error)
	// Replace writes rec with row in place of old (rule 5), on the
	// condition that old is unchanged: ledger.ErrRowExists when it changed.
	Replace(ctx context.Context, rec *session.Record, row ledger.Row, old *ledger.Row) error
	// Row reads a user's row for a key, strongly consistent; nil when
	// there is none.
	Row(ctx context.Context, userID, key string) (*ledger.Row, error)
	// Session reads a session, strongly consistent; nil when there is none.
	Session(ctx context.Context, id string) (*session.Record, error)
}

// keyedStart is a start with an operation key as the ledger's rounds run it.
type keyedStart struct {
	// Claim is what it brings to its key's row; Claim.Mine is set by the
	// executor.
	Claim ledger.Claim
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

// errBusy is a start whose key others kept changing.
var errBusy = problem.New(problem.ServiceUnavailable, "The operation key is busy. Try again shortly.")

// runKeyed obtains the session of a start: a new one written with its row, or
// what the rules say about the row that stands in the way, round after
// round (Again) while others keep changing the row. Errors of st pass as
// they came.
func runKeyed(ctx context.Context, st rows, s keyedStart) (ledger.Outcome, error) {
	return Again(ctx, errAgain, errBusy, func() (ledger.Outcome, error) { return round(ctx, st, s) })
}

// answerKeyed is what the key's row says to a start that writes nothing (a
// webhook redelivery, whose key already has its run): the row is read
// and judged by the rules runKeyed judges a row with, as AnyRequest asks
// (rules 1 to 3, then rule 7 with the row's session): the replayed
// session, the refusal, or none when no live row stands (none, or an
// expired one).
func answerKeyed(ctx context.Context, st rows, c ledger.Claim, key string) (ledger.Outcome, error) {
	c.AnyRequest = true
	r, err := judge(ctx, st, keyedStart{Claim: c, Key: key}, nil, nil)
	switch {
	case err != nil:
		return ledger.Outcome{}, err
	case r.Step == ledger.Replay:
		return ledger.Outcome{Kind: ledger.Replayed, Record: r.rec}, nil
	case r.Step == ledger.Refuse:
		return r.refused(r.Err, true), nil
	}
	return ledger.Outcome{}, nil // Create: no live row
}

// errAgain is a round that met a row others were changing: judge again,
// after a short pause.
var errAgain = errors.New("commit: the row changed under the start")

// round is one try: write the session with a new row (unless checks 3 to
// 6 refused the start), then judge the row that refused the write, and do
// what the rules say.
func round(ctx context.Context, st rows, s keyedStart) (ledger.Outcome, error) {
	var mine *session.Record
	var row *ledger.Row
	if s.Refusal == nil {
		mine = s.New(s.NewID())
		var err error
		if row, err = st.Create(ctx, mine, ledger.NewRow(s.Claim, s.Key, mine), s.Claim.Now); !errors.Is(err, ledger.ErrRowExists) {
			if err != nil {
				return ledger.Outcome{}, err
			}
			return ledger.Outcome{Kind: ledger.Started, Record: mine}, nil
		}
	}
	r, err := judge(ctx, st, s, mine, row)
	switch {
	case err != nil:
		return ledger.Outcome{}, err
	case r.Step == ledger.Own:
		return ledger.Outcome{Kind: ledger.Started, Record: mine}, nil
	case r.Step == ledger.Replay:
		return ledger.Outcome{Kind: ledger.Replayed, Record: r.rec}, nil
	case r.Step == ledger.Refuse:
		return r.refused(r.Err, true), nil
	case s.Refusal != nil: // Create or Afresh: a new session, which checks 3 to 6 refused
		return r.refused(s.Refusal, false), nil
	case r.Step == ledger.Create:
		return ledger.Outcome{}, errAgain // the row expired, or a concurrent transaction held it and has not written it
	}
	// Afresh: with the row's session id, replacing the row if unchanged.
	rec := s.New(r.row.SessionID)
	switch err := st.Replace(ctx, rec, ledger.NewRow(s.Claim, s.Key, rec), r.row); {
	case errors.Is(err, ledger.ErrRowExists):
		return ledger.Outcome{}, errAgain // someone else moved first
	case err != nil:
		return ledger.Outcome{}, err
	}
	return ledger.Outcome{Kind: ledger.Started, Record: rec}, nil
}

// ruling is the rules' verdict on a row, with the row judged and, when it
// read that row's session (read), the session: nil when it does not exist.
type ruling struct {
	ledger.Verdict
	row  *ledger.Row
	read bool
	rec  *session.Record
}

// refused is the start refused with err once r was ruled, with what the
// ruling read; byRow when the ruling itself is the refusal.
func (r ruling) refused(err error, byRow bool) ledger.Outcome {
	return ledger.Outcome{Kind: ledger.Refused, Refusal: err, ByRow: byRow, RowRead: true, Row: r.row, SessionRead: r.read, Session: r.rec}
}

// judge rules on the row that refused the start's write (nil when the
// refusal did not carry it, or nothing was written: it is read then),
// with the reads the rules ask for: the row's session, and, when rule 5
// finds it, the row again, since a concurrent start may have replaced the
// row with that very session since it was read; then the new row is the
// one judged.
func judge(ctx context.Context, st rows, s keyedStart, mine *session.Record, row *ledger.Row) (ruling, error) {
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
	if err == nil && r.Step == ledger.CheckSession && r.rec != nil { // rule 5 found the session: read the row again
		var fresh *ledger.Row
		if fresh, err = st.Row(ctx, c.UserID, s.Key); err == nil && ledger.Replaced(row, fresh, c.Now) {
			r, err = judgeRow(ctx, st, c, fresh)
		}
	}
	if err != nil || r.Step != ledger.CheckSession && r.Step != ledger.ReadSession {
		return r, err
	}
	r.Verdict = ledger.JudgeSession(r.row, c, r.rec)
	return r, nil
}

// judgeRow is the rules' verdict on a row, with the row's session read
// when the verdict asks for it.
func judgeRow(ctx context.Context, st rows, c ledger.Claim, row *ledger.Row) (ruling, error) {
	r := ruling{Verdict: ledger.Judge(row, c), row: row}
	if r.Step != ledger.CheckSession && r.Step != ledger.ReadSession {
		return r, nil
	}
	rec, err := st.Session(ctx, row.SessionID)
	if err != nil {
		return ruling{}, err
	}
	r.rec, r.read = rec, true
	return r, nil
}
