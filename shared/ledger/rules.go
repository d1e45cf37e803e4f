package ledger

import (
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
)

// Claim is what a start brings to its key's row.
type Claim struct {
	UserID, OrgID, BotID string
	// Fingerprint is the start's request's fingerprint.
	Fingerprint string
	// Mine is the id of the session this start wrote with a new row, or ""
	// when it wrote none (checks 3 to 6 refused it).
	Mine string
	// Policy is what rules 2 and 3 judge retirement by.
	Policy *allocation.Policy
	// Now is the time the start is judged at: expiry and leases.
	Now time.Time
	// AnyRequest judges the row alone, as a webhook delivery's key asks
	// (a redelivery renders its prompt anew): rules 1 to 3 apply, rules 4
	// to 6 do not, and any other row replays its session whatever its
	// fingerprint or status.
	AnyRequest bool
}

// Step is what a start does next.
type Step int

const (
	// Create: no row stands (there is none, or it has expired and counts
	// as absent): the start writes its session with a new row.
	Create Step = iota
	// Own: the row names the start's own session, Claim.Mine: an earlier
	// attempt of the same write went in and its answer was lost. The
	// session is new.
	Own
	// Refuse: the start is refused with Verdict.Err.
	Refuse
	// CheckSession: rule 5, the row is in progress with a lapsed lease,
	// or failed. Read the row's session and call JudgeSession.
	CheckSession
	// ReadSession: the row records this request; rule 7 replays its
	// session. Read it and call JudgeSession.
	ReadSession
	// Afresh: rule 5 found no session: the start runs afresh with the
	// row's session id, replacing the row on the condition that it is
	// unchanged.
	Afresh
	// Replay: the row's session, as read, is the answer.
	Replay
)

// Verdict is what the rules say about a row.
type Verdict struct {
	Step Step
	// Err is the refusal, for Refuse.
	Err error
}

// Judge applies the ledger rules, in the contract's order, to the row a
// start met: nil when there is none. A row that needs its session to be
// judged is CheckSession or ReadSession.
func Judge(row *Row, c Claim) Verdict {
	switch {
	case row == nil || row.Expired(c.Now):
		return Verdict{Step: Create}
	case c.Mine != "" && row.SessionID == c.Mine:
		return Verdict{Step: Own}
	case row.OrgID != c.OrgID || row.BotID != c.BotID || row.Intent != IntentCreateSession: // rule 1
		return refuse(problem.New(problem.OperationKeyReuseMismatch,
			"The operation key was used for another org, bot or kind of operation."))
	}
	if err := row.Retirement(c.Policy); err != nil { // rules 2 and 3
		return refuse(err)
	}
	switch {
	case c.AnyRequest:
		return Verdict{Step: ReadSession}
	case row.Status == StatusInProgress && row.LeaseUntil.After(c.Now): // rule 4
		return refuse(&problem.Error{Code: problem.CreationInProgress,
			Detail: "A session for this operation key is being created. Try again shortly.", RetryAfter: row.LeaseUntil.Sub(c.Now)})
	case lapsed(row): // rule 5
		return Verdict{Step: CheckSession}
	case row.Fingerprint != c.Fingerprint: // rule 6
		return payloadMismatch()
	}
	return Verdict{Step: ReadSession} // rule 7
}

// JudgeSession finishes the judgment of a row that Judge found
// CheckSession or ReadSession, with the row's session as read: nil when
// it does not exist. Rule 5 without a session runs afresh, whatever the
// fingerprint; with one, rules 6 and 7 apply to it (rule 7 alone under
// Claim.AnyRequest). A session that is not the claim's user's and org's
// is, to this start, one that does not exist.
func JudgeSession(row *Row, c Claim, rec *session.Record) Verdict {
	switch {
	case c.AnyRequest:
	case rec == nil && lapsed(row):
		return Verdict{Step: Afresh}
	case row.Fingerprint != c.Fingerprint:
		return payloadMismatch()
	}
	switch {
	case rec == nil || rec.UserID != c.UserID || rec.OrgID != c.OrgID:
		return refuse(problem.New(problem.NotFound, "The session of this operation key no longer exists."))
	}
	return Verdict{Step: Replay}
}

// Replaced reports whether fresh, the row read again after rule 5 found
// old's session, stands instead of old: it exists, has not expired, and
// differs from old in what rule 5's replacement is conditioned on (status,
// fingerprint, session id, lease). A concurrent start that replaced old
// wrote that session with its own row: that row is the one to judge.
func Replaced(old, fresh *Row, now time.Time) bool {
	return fresh != nil && !fresh.Expired(now) && (fresh.Status != old.Status || fresh.Fingerprint != old.Fingerprint ||
		fresh.SessionID != old.SessionID || !fresh.LeaseUntil.Equal(old.LeaseUntil))
}

// lapsed is rule 5's row, once rule 4 has passed it: in progress (its
// lease lapsed) or failed.
func lapsed(row *Row) bool {
	return row.Status == StatusInProgress || row.Status == StatusFailed
}

func refuse(err error) Verdict { return Verdict{Step: Refuse, Err: err} }

// payloadMismatch is rule 6.
func payloadMismatch() Verdict {
	return refuse(problem.New(problem.OperationKeyPayloadMismatch, "The operation key was used with a different request."))
}
