// Package commit carries out a start: it reads the policy, plans the
// start by it (start.NewPlan), and writes its session with its ledger row
// in one transaction, doing what the ledger rules say about a row that
// stands in the way. Every
// entry point that starts a session (the start route, a trigger's slot,
// run-now, a webhook delivery) goes through its Executor.
package commit

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

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
	a, err := s.prepare(ctx, cmd, nil)
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
	a, err := s.prepare(ctx, cmd, adv)
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

// prepare reads the policy (unless the command brings one) and plans the
// start by it (start.NewPlan).
func (s *Executor) prepare(ctx context.Context, cmd start.Command, adv store.Beside) (*attempt, error) {
	policy := cmd.Policy
	if policy == nil {
		var err error
		if policy, err = s.Settings.Policy(ctx); err != nil {
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
