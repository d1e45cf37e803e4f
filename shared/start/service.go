package start

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/ledger"
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

// Refused is a start with an operation key refused once the key's ledger
// row was judged (by a ledger rule, or by checks 3 to 6 when no row stood
// in the way), with what the start read, so that a caller to whom any row
// of the key matters (the firing: a row consumes its slot) need not read
// it again. It unwraps to the refusal: problem.CodeOf and the answer are
// the refusal's.
type Refused struct {
	Err error
	// ByRow says that the key's row decided the answer (ledger rules 1 to
	// 4 and 6, or rule 7 finding its session gone): no start was judged
	// afresh. Otherwise checks 3 to 6 refused a start that no row stood in
	// the way of.
	ByRow bool
	// Row is the key's ledger row as the start judged it (an expired one
	// counts as none); nil when the key had none.
	Row *ledger.Row
	// SessionRead says whether the start read the row's session, and
	// Session is that session as read: nil when it does not exist.
	SessionRead bool
	Session     *session.Record
}

func (e *Refused) Error() string { return e.Err.Error() }

func (e *Refused) Unwrap() error { return e.Err }

// maxRounds bounds how often a start re-judges a ledger row that others keep
// changing under it.
const maxRounds = 4

// busy is the detail of a start whose key others keep changing.
const busy = "The operation key is busy. Try again shortly."

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

// StartNow obtains the session of a trigger started now (POST
// /v1/triggers/{triggerId}/run): with key, the caller's Idempotency-Key
// ("" for none), a start whose operation key is NowKey (the request's own
// is replaced), else one without a key; the trigger's manual run is
// written in the new session's transaction. A replay writes none.
func (s *Service) StartNow(ctx context.Context, cmd Command, run *store.ManualRun, key string) (*Result, error) {
	req := *cmd.Request
	req.OperationKey = ""
	if key != "" {
		req.OperationKey = NowKey(run.Seen.ID, key)
	}
	cmd.Request = &req
	return s.start(ctx, cmd, run)
}

// NowKey is the operation key of a trigger started now with the
// Idempotency-Key key.
func NowKey(triggerID, key string) string {
	return ReservedKeyPrefix + triggerID + ":now:" + key
}

// SlotKey is the operation key of a trigger's slot.
func SlotKey(triggerID string, slot time.Time) string {
	return ReservedKeyPrefix + triggerID + ":" + slot.Format(session.TimeFormat)
}

// start is the steps of a start: prepare it, then write its session, with
// its ledger row when it has an operation key.
func (s *Service) start(ctx context.Context, cmd Command, adv store.Beside) (*Result, error) {
	a, err := s.prepare(ctx, cmd, adv)
	switch {
	case err != nil:
		return nil, err
	case cmd.Request.OperationKey == "":
		return s.startUnkeyed(ctx, a)
	}
	return s.startKeyed(ctx, a)
}

// attempt is a start as prepared: its command, the placement that checks
// 3 to 6 gave it or their refusal, what goes with its new session (a
// slot's advance, a trigger's manual run), and the claim the ledger judges it by (the time
// it is judged at included).
type attempt struct {
	cmd       Command
	placement allocation.Placement
	// refusal is the placement's error: reported only when no ledger row
	// judges the start first.
	refusal error
	adv     store.Beside
	claim   ledger.Claim
}

// prepare reads the policy (unless the command brings one), places the
// session (the shared kind and checks 3 to 6; no I/O) and, with an
// operation key, computes the request's fingerprint.
func (s *Service) prepare(ctx context.Context, cmd Command, adv store.Beside) (*attempt, error) {
	policy := cmd.Policy
	if policy == nil {
		var err error
		if policy, err = s.Settings.Policy(ctx); err != nil {
			return nil, err
		}
	}
	req := cmd.Request
	kind := req.Kind
	if kind == "" {
		kind = allocation.KindIsolated
	}
	a := &attempt{cmd: cmd, adv: adv, claim: ledger.Claim{
		UserID: cmd.UserID, OrgID: req.OrgID, BotID: cmd.BotID, Policy: policy, Now: s.now(),
	}}
	a.placement, a.refusal = policy.Place(kind, cmd.Allocation, allocation.Owner(cmd.UserID, req.OrgID))
	if req.OperationKey == "" {
		return a, nil
	}
	fp, err := Fingerprint(req, cmd.Allocation)
	a.claim.Fingerprint = fp
	return a, err
}

// startUnkeyed writes a new session without a ledger row (with what goes
// beside it).
func (s *Service) startUnkeyed(ctx context.Context, a *attempt) (*Result, error) {
	if a.refusal != nil {
		return nil, a.refusal
	}
	rec := s.newRecord(a, s.newSessionID())
	if err := s.lost(ctx, rec, s.Table.PutSession(ctx, rec, a.adv)); err != nil {
		return nil, unexpected(err)
	}
	return &Result{Record: rec}, nil
}

// startKeyed writes a new session with its ledger row, or does what the
// ledger rules say about the row that stands in the way, round after
// round while others keep changing the row.
func (s *Service) startKeyed(ctx context.Context, a *attempt) (*Result, error) {
	for range maxRounds {
		res, err := s.round(ctx, a)
		if res != nil || !errors.Is(err, errAgain) {
			return res, err
		}
		if err := store.Pause(ctx, 10*time.Millisecond, busy); err != nil {
			return nil, err
		}
	}
	return nil, problem.New(problem.ServiceUnavailable, busy)
}

// errAgain is a round that met a row others were changing: judge again,
// after a short pause.
var errAgain = errors.New("start: the ledger row changed under the start")

// round is one try: write the session with a new row (unless checks 3 to
// 6 refused the start), then judge the row that refused the write, and do
// what the ledger says.
func (s *Service) round(ctx context.Context, a *attempt) (*Result, error) {
	var mine *session.Record
	var row *ledger.Row
	if a.refusal == nil {
		mine = s.newRecord(a, s.newSessionID())
		var err error
		if row, err = s.create(ctx, a, mine); !errors.Is(err, store.ErrLedgerExists) {
			return resultOf(mine, err)
		}
	}
	r, err := s.judge(ctx, a, mine, row)
	switch {
	case err != nil:
		return nil, err
	case r.Step == ledger.Own:
		return &Result{Record: mine}, nil
	case r.Step == ledger.Replay:
		return &Result{Record: r.rec, Replayed: true}, nil
	case r.Step == ledger.Refuse:
		return nil, r.refused(r.Err, true)
	case a.refusal != nil: // Create or Afresh: a new session, which checks 3 to 6 refused
		return nil, r.refused(a.refusal, false)
	case r.Step == ledger.Create:
		return nil, errAgain // the row expired, or a concurrent transaction held it and has not written it
	}
	return s.replace(ctx, a, r.row)
}

// create writes a new session with the key's row (and the advance). When
// the row exists, the error is store.ErrLedgerExists and the row is as
// the refusal found it, or nil when the refusal did not carry it.
func (s *Service) create(ctx context.Context, a *attempt, mine *session.Record) (*ledger.Row, error) {
	existing, err := s.Table.CreateSession(ctx, mine, s.newRow(a, mine), a.claim.Now, a.adv)
	return existing, s.lost(ctx, mine, err) // a lost answer: the row (and the advance) went in with the session
}

// replace starts afresh, with the row's session id, the session of a row
// that rule 5 found without one, replacing the row on the condition that
// it is unchanged.
func (s *Service) replace(ctx context.Context, a *attempt, row *ledger.Row) (*Result, error) {
	rec := s.newRecord(a, row.SessionID)
	_, err := s.Table.ReplaceLedger(ctx, rec, s.newRow(a, rec), row, a.adv)
	if errors.Is(err, store.ErrLedgerExists) || errors.Is(err, store.ErrSessionExists) {
		return nil, errAgain // someone else moved first
	}
	return resultOf(rec, err)
}

// resultOf is a write of the new session rec as the start answers it: the
// session, the trigger's move as it is, any other error unexpected.
func resultOf(rec *session.Record, err error) (*Result, error) {
	switch {
	case err == nil:
		return &Result{Record: rec}, nil
	case errors.Is(err, store.ErrTriggerMoved):
		return nil, err
	}
	return nil, unexpected(err)
}

// ruling is the ledger's verdict on a row, with the row it judged and, when
// it read that row's session (read), the session: nil when it does not
// exist.
type ruling struct {
	ledger.Verdict
	row  *ledger.Row
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
func (s *Service) judge(ctx context.Context, a *attempt, mine *session.Record, row *ledger.Row) (ruling, error) {
	c := a.claim
	if mine != nil {
		c.Mine = mine.SessionID
	}
	var err error
	if row == nil {
		// The ledger comes before checks 3 to 6: a start they refused is
		// judged by its key's row, when it has one.
		if row, err = s.readRow(ctx, a); err != nil {
			return ruling{}, err
		}
	}
	r, err := s.judgeRow(ctx, c, row)
	if err == nil && r.Step == ledger.CheckSession && r.rec != nil { // rule 5 found the session: read the row again
		var fresh *ledger.Row
		if fresh, err = s.readRow(ctx, a); err == nil && ledger.Replaced(row, fresh, c.Now) {
			r, err = s.judgeRow(ctx, c, fresh)
		}
	}
	if err != nil || r.Step != ledger.CheckSession && r.Step != ledger.ReadSession {
		return r, err
	}
	r.Verdict = ledger.JudgeSession(r.row, c, r.rec)
	return r, nil
}

// judgeRow is the ledger's verdict on a row, with the row's session read
// when the verdict asks for it.
func (s *Service) judgeRow(ctx context.Context, c ledger.Claim, row *ledger.Row) (ruling, error) {
	r := ruling{Verdict: ledger.Judge(row, c), row: row}
	if r.Step != ledger.CheckSession && r.Step != ledger.ReadSession {
		return r, nil
	}
	rec, err := s.Table.GetSession(ctx, row.SessionID)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return ruling{}, unexpected(err)
	default:
		r.rec = rec
	}
	r.read = true
	return r, nil
}

// lost settles err, the answer to a write of the new session rec. When
// the session's key was taken (store.ErrSessionExists), only an earlier
// attempt of this same write can have taken it, since its id is new and
// random: a retry found the write whose answer was lost. It returns nil
// when the table holds rec, the refusal when it does not, and the fault
// when the session cannot be read: then whether it was written is not
// known, and a retry will tell. Any other answer is as it came.
func (s *Service) lost(ctx context.Context, rec *session.Record, err error) error {
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

// readRow reads the start's ledger row; nil when there is none.
func (s *Service) readRow(ctx context.Context, a *attempt) (*ledger.Row, error) {
	row, err := s.Table.GetLedger(ctx, a.cmd.UserID, a.cmd.Request.OperationKey)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, unexpected(err)
	}
	return row, nil
}

// newRecord is the session the attempt writes, with the id given.
func (s *Service) newRecord(a *attempt, id string) *session.Record {
	cmd, p, req := a.cmd, a.placement, a.cmd.Request
	return &session.Record{
		SessionID: id, SchemaVersion: 2,
		UserID: cmd.UserID, OrgID: req.OrgID, BotID: cmd.BotID, CreatedOnPlatform: req.CreatedOnPlatform,
		Repository: req.Repository, Agent: req.Agent,
		CreatedAt: a.claim.Now.UTC().Truncate(time.Millisecond),
		Sandbox: session.Sandbox{
			ID: allocation.SandboxID(id), Kind: p.Kind, Provider: p.Provider, ProviderStored: true, Allocation: p.Allocation,
		},
	}
}

// newRow is the ledger row the attempt writes with rec: completed.
func (s *Service) newRow(a *attempt, rec *session.Record) ledger.Row {
	cmd, now := a.cmd, a.claim.Now
	return ledger.Row{
		UserID: cmd.UserID, OperationKey: cmd.Request.OperationKey, Intent: ledger.IntentCreateSession,
		OrgID: cmd.Request.OrgID, BotID: cmd.BotID, Fingerprint: a.claim.Fingerprint, Status: ledger.StatusCompleted,
		SessionID: rec.SessionID, SandboxID: rec.Sandbox.ID, SandboxKind: string(rec.Sandbox.Kind),
		SandboxProvider: string(rec.Sandbox.Provider), SandboxAllocation: rec.Sandbox.Allocation.Name(),
		CreatedAt: now.UTC().Format(session.TimeFormat), ExpiresAt: now.Add(ledger.TTL),
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
