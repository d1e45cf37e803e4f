// Package commit carries out a start: it reads the policy and the
// environments the start resolves its own from, plans the start by them
// (start.NewPlan), and writes its session with its ledger row in one
// transaction, doing what the ledger rules say about a row that stands in
// the way. Every entry point that starts a session (the start route, a
// trigger's slot, run-now, a webhook delivery) goes through its Executor.
package commit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/start"
	"github.com/cloud-agent/control-plane/shared/store"
)

// SessionStore is what the executor reads and writes: sessions and
// their ledger rows, with what goes beside them (store.Table).
type SessionStore interface {
	PutSession(ctx context.Context, rec *session.Record, beside store.Beside) error
	CreateSession(ctx context.Context, rec *session.Record, row ledger.Row, now time.Time, beside store.Beside) (*ledger.Row, error)
	ReplaceLedger(ctx context.Context, rec *session.Record, row ledger.Row, old *ledger.Row, beside store.Beside) (*ledger.Row, error)
	GetLedger(ctx context.Context, userID, operationKey string) (*ledger.Row, error)
	GetSession(ctx context.Context, sessionID string) (*session.Record, error)
	ReadEnvironments(ctx context.Context, sources []environment.Source) (*environment.Found, error)
}

// Executor starts sessions.
type Executor struct {
	Table    SessionStore
	Settings *settings.Settings
	// Now and NewSessionID default to the clock and workspace_<uuid v4>.
	Now          func() time.Time
	NewSessionID func() string
}

// Start obtains the session of a command: a new one, or, with an operation
// key whose ledger row exists, what the ledger rules say. The session and
// its row are written together or not at all. A refusal is an outcome;
// the error is a fault.
func (s *Executor) Start(ctx context.Context, cmd start.Command) (ledger.Outcome, error) {
	return s.start(ctx, cmd, nil)
}

// StartBeside obtains the session of a command whose request carries
// the operation key a trigger's run gives it (package triggerrun), or
// none, with beside written in the new session's transaction (a slot's
// advance, a manual run). A replay writes nothing. When beside is
// conditioned on the trigger as read and the trigger moved, nothing is
// written and the error is store.ErrTriggerMoved.
func (s *Executor) StartBeside(ctx context.Context, cmd start.Command, beside store.Beside) (ledger.Outcome, error) {
	return s.start(ctx, cmd, beside)
}

// Answer is what the ledger row of the command's operation key says,
// writing nothing (answerKeyed): the replayed session, the rules'
// refusal, or none when no live row stands. A webhook redelivery is
// judged by it, so that its row decides as it does for the start route
// and a trigger's run.
func (s *Executor) Answer(ctx context.Context, cmd start.Command) (ledger.Outcome, error) {
	a, err := s.prepare(ctx, cmd, nil, false)
	if err != nil {
		return ledger.Outcome{}, err
	}
	out, err := answerKeyed(ctx, keyed{s, nil}, a.Claim, cmd.Request.OperationKey)
	if err != nil {
		return ledger.Outcome{}, unexpected(err)
	}
	return out, nil
}

// start is the steps of a start: prepare it, then write its session, with
// its ledger row when it has an operation key.
func (s *Executor) start(ctx context.Context, cmd start.Command, adv store.Beside) (ledger.Outcome, error) {
	a, err := s.prepare(ctx, cmd, adv, true)
	switch {
	case err != nil:
		return ledger.Outcome{}, err
	case cmd.Request.OperationKey == "":
		return s.startUnkeyed(ctx, a)
	}
	return s.startKeyed(ctx, a)
}

// attempt is a start as prepared: its plan, and what goes with its new
// session (a slot's advance, a trigger's manual run).
type attempt struct {
	*start.Plan
	adv store.Beside
}

// prepare reads the policy (unless the command brings one), resolves the
// environment when a new session may need it (resolve) and the command
// does not bring it resolved: one read of the named environment or the
// default pointers (a saved allocation that falls back is a warning on
// the line), and plans the start by them (start.NewPlan).
func (s *Executor) prepare(ctx context.Context, cmd start.Command, adv store.Beside, resolve bool) (*attempt, error) {
	policy := cmd.Policy
	if policy == nil {
		var err error
		if policy, err = s.Settings.Policy(ctx); err != nil {
			return nil, err
		}
	}
	if resolve && !cmd.Resolved {
		var err error
		if cmd, err = s.inEnvironment(ctx, cmd, policy); err != nil {
			return nil, err
		}
	}
	p, err := start.NewPlan(cmd, policy, s.now())
	return &attempt{p, adv}, err
}

// startUnkeyed writes a new session without a ledger row (with what goes
// beside it).
func (s *Executor) startUnkeyed(ctx context.Context, a *attempt) (ledger.Outcome, error) {
	if a.Refusal != nil {
		return ledger.RefusedWith(a.Refusal), nil
	}
	rec := a.Session(s.newSessionID())
	if err := s.lost(ctx, rec, s.Table.PutSession(ctx, rec, a.adv)); err != nil {
		return ledger.Outcome{}, unexpected(err)
	}
	return ledger.Outcome{Kind: ledger.Started, Record: rec}, nil
}

// startKeyed writes a new session with its ledger row, or does what the
// ledger says about the row that stands in the way (runKeyed).
func (s *Executor) startKeyed(ctx context.Context, a *attempt) (ledger.Outcome, error) {
	out, err := runKeyed(ctx, keyed{s, a.adv}, keyedStart{
		Claim: a.Claim, Key: a.Command.Request.OperationKey,
		New: a.Session, NewID: s.newSessionID, Refusal: a.Refusal,
	})
	if err != nil && !errors.Is(err, store.ErrTriggerMoved) {
		return ledger.Outcome{}, unexpected(err)
	}
	return out, err
}

// keyed is the table as the ledger asks it, for a start whose new session
// writes adv beside it.
type keyed struct {
	s   *Executor
	adv store.Beside
}

func (k keyed) Create(ctx context.Context, rec *session.Record, row ledger.Row, now time.Time) (*ledger.Row, error) {
	existing, err := k.s.Table.CreateSession(ctx, rec, row, now, k.adv)
	return existing, k.s.lost(ctx, rec, err) // a lost answer: the row (and the advance) went in with the session
}

func (k keyed) Replace(ctx context.Context, rec *session.Record, row ledger.Row, old *ledger.Row) error {
	_, err := k.s.Table.ReplaceLedger(ctx, rec, row, old, k.adv)
	if errors.Is(err, store.ErrSessionExists) {
		return ledger.ErrRowExists // the start that replaced the row first wrote the session
	}
	return err
}

func (k keyed) Row(ctx context.Context, userID, key string) (*ledger.Row, error) {
	row, err := k.s.Table.GetLedger(ctx, userID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return row, err
}

func (k keyed) Session(ctx context.Context, id string) (*session.Record, error) {
	rec, err := k.s.Table.GetSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return rec, err
}

// lost settles err, the answer to a write of the new session rec. When
// the session's key was taken (store.ErrSessionExists), only an earlier
// attempt of this same write can have taken it, since its id is new and
// random: a retry found the write whose answer was lost. It returns nil
// when the table holds rec, the refusal when it does not, and the fault
// when the session cannot be read: then whether it was written is not
// known, and a retry will tell. Any other answer is as it came.
func (s *Executor) lost(ctx context.Context, rec *session.Record, err error) error {
	if !errors.Is(err, store.ErrSessionExists) {
		return err
	}
	stored, rerr := s.Table.GetSession(ctx, rec.SessionID)
	switch {
	case rerr == nil && stored.UserID == rec.UserID:
		return nil
	case rerr != nil && problem.CodeOf(rerr) == problem.ServiceUnavailable:
		return rerr
	}
	return err
}

func (s *Executor) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Executor) newSessionID() string {
	if s.NewSessionID != nil {
		return s.NewSessionID()
	}
	return "workspace_" + uuid.NewString()
}

// unexpected passes problem errors through, makes a stored session that
// does not decode session_record_invalid, and anything else an internal
// error whose cause is logged.
func unexpected(err error) error {
	var pe *problem.Error
	var invalid *store.InvalidSessionError
	switch {
	case errors.As(err, &pe):
		return err
	case errors.As(err, &invalid):
		return problem.Wrap(problem.SessionRecordInvalid, "The stored session record is invalid.", err)
	}
	return problem.Wrap(problem.InternalError, "An unexpected error occurred.", err)
}

// Tries is the one budget of a write conditioned on what it read (a
// trigger, a ledger row) that found it moved: it is read, judged and
// written this many times in all.
const Tries = 3

// pause is the shortest wait between two tries. Each wait is a random
// while from it to five times it, so that a transaction in flight can land
// and writers that met do not meet again at once.
const pause = 5 * time.Millisecond

// Again runs try, and again while its error is moved, with a pause
// between tries, at most Tries times. Once the budget is spent the error
// is spent; when ctx ends during a pause, spent wrapped with ctx's
// error.
func Again[T any](ctx context.Context, moved error, spent *problem.Error, try func() (T, error)) (T, error) {
	var zero T
	for i := range Tries {
		if i > 0 {
			select {
			case <-time.After(pause + rand.N(4*pause)):
			case <-ctx.Done():
				return zero, fmt.Errorf("%w: %w", spent, ctx.Err())
			}
		}
		v, err := try()
		if !errors.Is(err, moved) {
			return v, err
		}
	}
	return zero, spent
}

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
