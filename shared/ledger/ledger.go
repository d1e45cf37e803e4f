// Package ledger is the operation ledger of the contract's start route:
// its row (row.go), the seven rules that say what a start with an
// operation key does about the row the key already has (rules.go), and
// what a start came to (Outcome, this file). It is pure: the
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

// Outcome is what a start came to: a session started or replayed, or the
// start refused with what it read, so that a caller to whom any row of
// the key matters (the firing: a row consumes its slot) need not read it
// again. Faults are errors, not outcomes. The zero Outcome is none: no
// live row answers (Executor.Answer).
type Outcome struct {
	Kind Kind
	// Record is the session started or replayed.
	Record *session.Record
	// Refusal is a refused start's answer, a *problem.Error.
	Refusal error
	// ByRow says that the key's row decided the refusal (rules 1 to 4 and
	// 6, or rule 7 finding its session gone): no start was judged afresh.
	// Otherwise checks 3 to 6 refused a start that no row stood in the way
	// of.
	ByRow bool
	// RowRead says whether the key's row was read and judged, and Row is
	// that row (an expired one counts as none): nil when the key had none.
	RowRead bool
	Row     *Row
	// SessionRead says whether the row's session was read, and Session is
	// that session as read: nil when it does not exist.
	SessionRead bool
	Session     *session.Record
}

// Kind is what a start came to.
type Kind uint8

// The kinds of Outcome.
const (
	None Kind = iota
	Started
	Replayed
	Refused
)

// RefusedWith is the outcome of a start refused with err before any row was
// judged.
func RefusedWith(err error) Outcome { return Outcome{Kind: Refused, Refusal: err} }

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
