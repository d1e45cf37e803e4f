package start

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/store"
)

// Service starts sessions.
type Service struct {
	Table    *store.Table
	Settings *settings.Settings
	// Now and NewSessionID default to the clock and workspace_<uuid v4>.
	Now          func() time.Time
	NewSessionID func() string
}

// Command is a start with its caller: the user it is for, the bot it acts
// as, the validated request and its allocation (zero when none was given),
// which has passed checks 1 and 2.
type Command struct {
	UserID     string
	BotID      string
	Request    *Request
	Allocation allocation.Allocation
	// Policy, when set, is the policy the start judges by (the firing
	// judges every trigger of an invocation by one); nil reads the
	// settings.
	Policy *allocation.Policy
}

// Result is the session a start obtained, new or replayed.
type Result struct {
	Record   *session.Record
	Replayed bool
}

// maxRounds bounds how often a start re-judges a ledger row that others keep
// changing under it.
const maxRounds = 4

// Start obtains the session of a command: a new one, or, with an operation
// key whose ledger row exists, what the ledger rules say. The session and
// its row are written together or not at all.
func (s *Service) Start(ctx context.Context, cmd Command) (*Result, error) {
	return s.start(ctx, cmd, nil)
}

// StartSlot obtains the session of a trigger's slot: a start whose
// operation key is the slot's (SlotKey; the request's own key, if any, is
// replaced), written in one transaction with the trigger's advance. A
// replay writes no advance. When the trigger has moved since it was read,
// nothing is written and the error is store.ErrTriggerMoved.
func (s *Service) StartSlot(ctx context.Context, cmd Command, adv store.Advance) (*Result, error) {
	req := *cmd.Request
	req.OperationKey = SlotKey(adv.Seen.ID, adv.Slot)
	cmd.Request = &req
	return s.start(ctx, cmd, &adv)
}

// SlotKey is the operation key of a trigger's slot.
func SlotKey(triggerID string, slot time.Time) string {
	return ReservedKeyPrefix + triggerID + ":" + slot.Format(session.TimeFormat)
}

func (s *Service) start(ctx context.Context, cmd Command, adv *store.Advance) (*Result, error) {
	policy := cmd.Policy
	if policy == nil {
		var err error
		if policy, err = s.Settings.Policy(ctx); err != nil {
			return nil, err
		}
	}
	req := cmd.Request
	owner := allocation.Owner(cmd.UserID, req.OrgID)
	kind := req.Kind
	if kind == "" {
		kind = allocation.KindIsolated
	}
	placement, placeErr := policy.Place(kind, cmd.Allocation, owner)
	now := s.now()
	if req.OperationKey == "" {
		if placeErr != nil {
			return nil, placeErr
		}
		rec := s.newRecord(cmd, placement, s.newSessionID(), now)
		err := s.Table.PutSession(ctx, rec)
		if errors.Is(err, store.ErrSessionExists) {
			err = s.written(ctx, rec, err) // a retry found the write whose answer was lost
		}
		if err != nil {
			return nil, unexpected(err)
		}
		return &Result{Record: rec}, nil
	}
	fp, err := Fingerprint(req, cmd.Allocation)
	if err != nil {
		return nil, err
	}
	for range maxRounds {
		var row *session.LedgerRow
		var mine *session.Record
		if placeErr == nil {
			mine = s.newRecord(cmd, placement, s.newSessionID(), now)
			existing, err := s.Table.CreateSession(ctx, mine, s.newRow(cmd, mine, fp, now), now, adv)
			switch {
			case err == nil:
				return &Result{Record: mine}, nil
			case errors.Is(err, store.ErrSessionExists):
				// A retry found the write whose answer was lost; the row
				// (and the advance) went in with the session.
				if err := s.written(ctx, mine, err); err != nil {
					return nil, unexpected(err)
				}
				return &Result{Record: mine}, nil
			case errors.Is(err, store.ErrTriggerMoved):
				return nil, err
			case !errors.Is(err, store.ErrLedgerExists):
				return nil, unexpected(err)
			}
			row = existing
		}
		if row == nil {
			// The ledger comes before checks 3 to 6: a refused start whose
			// key has a live row is judged by the row.
			if row, err = s.readRow(ctx, cmd, now); err != nil {
				return nil, err
			}
			if row == nil && placeErr != nil {
				return nil, placeErr
			}
			if row == nil {
				// The row expired, or a concurrent transaction held it and
				// has not written it: try again after a short pause.
				if err := store.Pause(ctx, 10*time.Millisecond, "The operation key is busy. Try again shortly."); err != nil {
					return nil, err
				}
				continue
			}
		}
		if mine != nil && row.SessionID == mine.SessionID {
			// The row names this start's own session: a write whose answer
			// was lost and that no retry reported as such (its session's
			// refusal comes first, and DynamoDB answers a retry of the same
			// transaction as a success). Defensive: it is new.
			return &Result{Record: mine}, nil
		}
		res, afresh, err := s.judge(ctx, policy, cmd, row, fp, now, true)
		if !afresh {
			return res, err
		}
		if placeErr != nil {
			return nil, placeErr
		}
		rec := s.newRecord(cmd, placement, row.SessionID, now)
		_, err = s.Table.ReplaceLedger(ctx, rec, s.newRow(cmd, rec, fp, now), row, adv)
		switch {
		case err == nil:
			return &Result{Record: rec}, nil
		case errors.Is(err, store.ErrTriggerMoved):
			return nil, err
		case !errors.Is(err, store.ErrLedgerExists) && !errors.Is(err, store.ErrSessionExists):
			return nil, unexpected(err)
		}
		// Someone else moved first: judge again, after a short pause.
		if err := store.Pause(ctx, 10*time.Millisecond, "The operation key is busy. Try again shortly."); err != nil {
			return nil, err
		}
	}
	return nil, problem.New(problem.ServiceUnavailable, "The operation key is busy. Try again shortly.")
}

// written checks that rec, refused with refusal because its key was taken,
// is what the table holds: its session id is new and random, so only an
// earlier attempt of this same write can have taken the key. It returns
// nil when it is, the refusal when it is not, and the fault when the
// session cannot be read: then whether it was written is not known, and a
// retry will tell.
func (s *Service) written(ctx context.Context, rec *session.Record, refusal error) error {
	stored, err := s.Table.GetSession(ctx, rec.SessionID)
	switch {
	case err == nil && stored.UserID == rec.UserID:
		return nil
	case err != nil && problem.CodeOf(err) == problem.ServiceUnavailable:
		return err
	}
	return refusal
}

// readRow reads the command's ledger row; nil when there is none or it has
// expired (an expired row counts as absent).
func (s *Service) readRow(ctx context.Context, cmd Command, now time.Time) (*session.LedgerRow, error) {
	row, err := s.Table.GetLedger(ctx, cmd.UserID, cmd.Request.OperationKey)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, unexpected(err)
	case row.Expired(now):
		return nil, nil
	}
	return row, nil
}

// judge applies the ledger rules, in order, to an existing row. afresh
// means rule 5 found no session: start again with the row's session id.
// When rule 5 finds the session and recheck is set, the row is read again
// first: a concurrent start may have replaced it, with the session, since
// it was read, and then the new row is judged.
func (s *Service) judge(ctx context.Context, policy *allocation.Policy, cmd Command, row *session.LedgerRow, fp string, now time.Time, recheck bool) (res *Result, afresh bool, err error) {
	if row.OrgID != cmd.Request.OrgID || row.BotID != cmd.BotID || row.Intent != session.IntentCreateSession {
		return nil, false, problem.New(problem.OperationKeyReuseMismatch,
			"The operation key was used for another org, bot or kind of operation.")
	}
	if err := row.Retirement(policy); err != nil {
		return nil, false, err
	}
	if row.Status == session.StatusInProgress && row.LeaseUntil.After(now) {
		return nil, false, &problem.Error{Code: problem.CreationInProgress,
			Detail: "A session for this operation key is being created. Try again shortly.", RetryAfter: row.LeaseUntil.Sub(now)}
	}
	var rec *session.Record
	if row.Status == session.StatusInProgress || row.Status == session.StatusFailed {
		rec, err = s.Table.GetSession(ctx, row.SessionID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, true, nil
		}
		if err != nil {
			return nil, false, unexpected(err)
		}
		if recheck {
			fresh, err := s.readRow(ctx, cmd, now)
			if err != nil {
				return nil, false, err
			}
			if fresh != nil && (fresh.Status != row.Status || fresh.Fingerprint != row.Fingerprint ||
				fresh.SessionID != row.SessionID || !fresh.LeaseUntil.Equal(row.LeaseUntil)) {
				return s.judge(ctx, policy, cmd, fresh, fp, now, false)
			}
		}
	}
	if row.Fingerprint != fp {
		return nil, false, problem.New(problem.OperationKeyPayloadMismatch,
			"The operation key was used with a different request.")
	}
	if rec == nil {
		rec, err = s.Table.GetSession(ctx, row.SessionID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, false, problem.New(problem.NotFound, "The session of this operation key no longer exists.")
		}
		if err != nil {
			return nil, false, unexpected(err)
		}
	}
	if rec.UserID != cmd.UserID || rec.OrgID != cmd.Request.OrgID {
		// A row may name only its own user's session: any other is, to
		// this caller, a session that does not exist.
		return nil, false, problem.New(problem.NotFound, "The session of this operation key no longer exists.")
	}
	return &Result{Record: rec, Replayed: true}, false, nil
}

func (s *Service) newRecord(cmd Command, p allocation.Placement, id string, now time.Time) *session.Record {
	req := cmd.Request
	return &session.Record{
		SessionID: id, SchemaVersion: 2,
		UserID: cmd.UserID, OrgID: req.OrgID, BotID: cmd.BotID, CreatedOnPlatform: req.CreatedOnPlatform,
		Repository: req.Repository, Agent: req.Agent,
		CreatedAt: now.UTC().Truncate(time.Millisecond),
		Sandbox: session.Sandbox{
			ID: allocation.SandboxID(id), Kind: p.Kind, Provider: p.Provider, ProviderStored: true, Allocation: p.Allocation,
		},
	}
}

func (s *Service) newRow(cmd Command, rec *session.Record, fp string, now time.Time) session.LedgerRow {
	return session.LedgerRow{
		UserID: cmd.UserID, OperationKey: cmd.Request.OperationKey, Intent: session.IntentCreateSession,
		OrgID: cmd.Request.OrgID, BotID: cmd.BotID, Fingerprint: fp, Status: session.StatusCompleted,
		SessionID: rec.SessionID, SandboxID: rec.Sandbox.ID, SandboxKind: string(rec.Sandbox.Kind),
		SandboxProvider: string(rec.Sandbox.Provider), SandboxAllocation: rec.Sandbox.Allocation.Name(),
		CreatedAt: now.UTC().Format(session.TimeFormat), ExpiresAt: now.Add(session.LedgerTTL),
	}
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) newSessionID() string {
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
	var invalid *session.InvalidRecordError
	switch {
	case errors.As(err, &pe):
		return err
	case errors.As(err, &invalid):
		return problem.Wrap(problem.SessionRecordInvalid, "The stored session record is invalid.", err)
	}
	return problem.Wrap(problem.InternalError, "An unexpected error occurred.", err)
}
