// Package ledger is the operation ledger of the contract's start route:
// its row (row.go), the seven rules that say what a start with an
// operation key does about the row the key already has (rules.go), and
// what a start obtained or why it was refused (this file). It is pure: the
// executor (package commit) writes a new session with its row, judges the
// row in the way by these rules and replaces it. The row's codec is the
// store's, beside the other items'.
package ledger

import (
	"errors"

	"github.com/cloud-agent/control-plane/shared/session"
)

// ErrRowExists is a write that met a row of the key: it exists and has not
// expired, a concurrent transaction holds it, or, for a replacement, it
// changed since it was read.
var ErrRowExists = errors.New("ledger: the operation key's row exists")

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

// NewRow is the row a start with claim c and operation key writes with
// its session rec: completed.
func NewRow(c Claim, key string, rec *session.Record) Row {
	return Row{
		UserID: c.UserID, OperationKey: key, Intent: IntentCreateSession,
		OrgID: c.OrgID, BotID: c.BotID, Fingerprint: c.Fingerprint, Status: StatusCompleted,
		SessionID: rec.SessionID, SandboxID: rec.Sandbox.ID, SandboxKind: string(rec.Sandbox.Kind),
		SandboxProvider: string(rec.Sandbox.Provider), SandboxAllocation: rec.Sandbox.Allocation.Name(),
		CreatedAt: c.Now.UTC().Format(session.TimeFormat), ExpiresAt: c.Now.Add(TTL),
	}
}
