// Package outcome holds how a session's run ended (contract v7), pure: an
// outcome and its rules (a report read strictly, the first report wins,
// the same report again changes nothing, a report after a timed_out mark
// replaces it once), a runner's claim and its heartbeats, the deadline
// after which a session with no outcome is marked timed_out, and the life
// of a session's token.
package outcome

import (
	"encoding/base64"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cloud-agent/control-plane/shared/ids"
	"github.com/cloud-agent/control-plane/shared/jsonbody"
	"github.com/cloud-agent/control-plane/shared/problem"
)

// The statuses of an outcome: the four a runner reports, and the mark of
// a session whose runner reported none in time.
const (
	Completed   = "completed"
	Failed      = "failed"
	Interrupted = "interrupted"
	TimedOut    = "timed_out"
	// NoOutcomeReported is a timed_out mark's error code.
	NoOutcomeReported = "no_outcome_reported"
)

// The contract's limits.
const (
	maxRunner  = 128
	maxCode    = 100
	maxMessage = 4096
	// maxAhead is how far after now a report's endedAt may be.
	maxAhead = 60 * time.Second
)

// Error is a failed or interrupted run's error.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Outcome is how a session's run ended.
type Outcome struct {
	Status              string
	Error               *Error // nil for none
	EndedAt, ReportedAt time.Time
	// Revision counts the outcomes recorded on the session: the sequence
	// of its Session Ended event is one more.
	Revision int
}

// Known reports whether status is an outcome's.
func Known(status string) bool {
	switch status {
	case Completed, Failed, Interrupted, TimedOut:
		return true
	}
	return false
}

// Final reports whether o is a runner's report, which nothing replaces; a
// timed_out mark is not final.
func (o *Outcome) Final() bool { return o != nil && o.Status != TimedOut }

// Report is a runner's report of how a session's run ended, read and
// checked (ParseReport).
type Report struct {
	Status string
	Runner string // "" when not given
	Error  *Error
	// EndedAt is the report's endedAt, zero when not given (now then).
	EndedAt time.Time
}

// reportBody is a report as JSON has it.
type reportBody struct {
	Status *string `json:"status"`
	Runner *string `json:"runner"`
	Error  *struct {
		Code    *string `json:"code"`
		Message *string `json:"message"`
	} `json:"error"`
	EndedAt *string `json:"endedAt"`
}

// ParseReport reads a report strictly and holds it to the contract's
// rules: a known status; a runner of 1 to 128 of [A-Za-z0-9_.:-]; an
// error only when not completed, its code 1 to 100 of [a-z0-9_.-], its
// message at most 4,096 code points, whose credential markers are kept as
// [redacted]; endedAt in RFC 3339, at most 60 seconds after now and not
// before the session's start (created). Each fault is invalid_request
// naming the member.
func ParseReport(body []byte, created, now time.Time) (*Report, error) {
	var b reportBody
	if err := jsonbody.Decode(body, &b); err != nil {
		return nil, err
	}
	var m problem.Members
	r := &Report{Status: m.Required("status", b.Status), Runner: m.Optional("runner", b.Runner)}
	if b.Error != nil {
		r.Error = &Error{Code: m.Required("error.code", b.Error.Code), Message: m.Required("error.message", b.Error.Message)}
	}
	ended := m.Optional("endedAt", b.EndedAt)
	if err := m.Err(); err != nil {
		return nil, err
	}
	switch r.Status {
	case Completed, Failed, Interrupted:
	default:
		m.Fail("status", "must be completed, failed or interrupted")
	}
	if r.Runner != "" && !ValidRunner(r.Runner) {
		m.Fail("runner", "must be 1 to 128 of A-Z, a-z, 0-9, _, ., : and -")
	}
	if e := r.Error; e != nil {
		switch {
		case r.Status == Completed:
			m.Fail("error", "is only for a run that did not complete")
		case !validCode(e.Code):
			m.Fail("error.code", "must be 1 to 100 of a-z, 0-9, _, . and -")
		case utf8.RuneCountInString(e.Message) > maxMessage:
			m.Fail("error.message", "must be at most 4096 characters")
		}
		e.Message = ids.RedactCredentials(e.Message)
	}
	if ended != "" {
		t, err := time.Parse(time.RFC3339Nano, ended)
		switch {
		case err != nil:
			m.Fail("endedAt", "must be an RFC 3339 time")
		case t.After(now.Add(maxAhead)):
			m.Fail("endedAt", "may be at most 60 seconds after now")
		case t.Before(created.Truncate(time.Second)): // the start as answered, whole seconds
			m.Fail("endedAt", "may not be before the session's start")
		}
		r.EndedAt = t.UTC().Truncate(time.Second)
	}
	return r, m.Err()
}

// ValidRunner: 1 to 128 of A-Z, a-z, 0-9, _, ., : and -.
func ValidRunner(s string) bool { return ids.OfChars(s, maxRunner, "_.:-") }

// validCode: 1 to 100 of a-z, 0-9, _, . and -.
func validCode(s string) bool {
	return ids.OfChars(s, maxCode, "_.-") && strings.ToLower(s) == s
}

// Errors of a report or a claim that meets what is recorded.
var (
	// ErrRecorded: another outcome is recorded (409
	// outcome_already_recorded, with the outcome as its extension).
	ErrRecorded = problem.New(problem.OutcomeAlreadyRecorded, "Another outcome is recorded for this session.")
	// ErrClaimed: another runner claimed the session (409
	// session_claimed, with the claim as its extension).
	ErrClaimed = problem.New(problem.SessionClaimed, "Another runner claimed this session.")
	// ErrEnded: the session's outcome is final (409 session_ended).
	ErrEnded = problem.New(problem.SessionEnded, "The session has ended.")
)

// Decision is what a report or a claim comes to on what is recorded:
// whether to write, and what to answer.
type Decision struct {
	// Write says the session changes: Outcome or Claim is what to record.
	Write   bool
	Outcome *Outcome
	Claim   *Claim
}

// Judge decides a report r at now on the session's recorded outcome
// (nil: none) and claim (nil: none): a claimed session takes reports from
// its runner only (ErrClaimed); the first report wins (recorded, with
// Revision one more); the same report again writes nothing and answers
// the recorded one; a different one is ErrRecorded; a report after a
// timed_out mark replaces it.
func Judge(r *Report, recorded *Outcome, claim *Claim, now time.Time) (Decision, error) {
	if claim != nil && r.Runner != claim.Runner {
		return Decision{}, ErrClaimed
	}
	ended := r.EndedAt
	if ended.IsZero() {
		ended = now.UTC().Truncate(time.Second)
	}
	switch {
	case recorded == nil || recorded.Status == TimedOut:
		next := &Outcome{Status: r.Status, Error: r.Error, EndedAt: ended, ReportedAt: now.UTC().Truncate(time.Second), Revision: 1}
		if recorded != nil {
			next.Revision = recorded.Revision + 1
		}
		return Decision{Write: true, Outcome: next}, nil
	case r.Status == recorded.Status && sameError(r.Error, recorded.Error) && (r.EndedAt.IsZero() || r.EndedAt.Equal(recorded.EndedAt)):
		return Decision{Outcome: recorded}, nil
	}
	return Decision{Outcome: recorded}, ErrRecorded
}

func sameError(a, b *Error) bool {
	return a == b || a != nil && b != nil && *a == *b
}

// Claim is a runner's claim of a session.
type Claim struct {
	Runner                 string
	ClaimedAt, HeartbeatAt time.Time
}

// ClaimFor decides runner's claim at now on the session's recorded claim
// (nil: none) and outcome (nil: none): a final outcome is ErrEnded;
// another runner's claim ErrClaimed; the first claim records the runner;
// the same runner's claim is a heartbeat, which moves HeartbeatAt to now
// (and writes nothing in the second of the last one).
func ClaimFor(runner string, recorded *Claim, o *Outcome, now time.Time) (Decision, error) {
	now = now.UTC().Truncate(time.Second)
	switch {
	case o.Final():
		return Decision{}, ErrEnded
	case recorded != nil && recorded.Runner != runner:
		return Decision{Claim: recorded}, ErrClaimed
	case recorded != nil && recorded.HeartbeatAt.Equal(now): // the same second's: nothing moves
		return Decision{Claim: recorded}, nil
	case recorded != nil:
		next := *recorded
		next.HeartbeatAt = now
		return Decision{Write: true, Claim: &next}, nil
	}
	return Decision{Write: true, Claim: &Claim{Runner: runner, ClaimedAt: now, HeartbeatAt: now}}, nil
}

// Deadline is when a session with no outcome is marked timed_out: timeout
// after its start, or after its last heartbeat when it has one.
func Deadline(created time.Time, claim *Claim, timeout time.Duration) time.Time {
	from := created
	if claim != nil && claim.HeartbeatAt.After(from) {
		from = claim.HeartbeatAt
	}
	return from.Add(timeout)
}

// Marked is the timed_out mark of a session at now, after its recorded
// outcome's revision (0: none).
func Marked(revision int, now time.Time) *Outcome {
	now = now.UTC().Truncate(time.Second)
	return &Outcome{Status: TimedOut, Error: &Error{Code: NoOutcomeReported, Message: "No outcome was reported in time."},
		EndedAt: now, ReportedAt: now, Revision: revision + 1}
}

// The life of a session's token: while the session has no final outcome
// and for a day after one, and never later than 7 days and a day after
// the session's start or its last heartbeat.
const (
	afterFinal = 24 * time.Hour
	longest    = 7*24*time.Hour + 24*time.Hour
)

// A session's token is sst_ and the unpadded base64url of the HMAC-SHA256
// that the session token key computes over TokenMessage: derived, never
// stored.
const (
	tokenPrefix = "sst_"
	tokenLength = len(tokenPrefix) + 43
)

// TokenMessage is what a session's token is the MAC of:
// session:v1:<sessionId>.
func TokenMessage(sessionID string) []byte { return []byte("session:v1:" + sessionID) }

// TokenOf is the token of a session whose MAC is mac.
func TokenOf(mac []byte) string { return tokenPrefix + base64.RawURLEncoding.EncodeToString(mac) }

// WellFormedToken reports whether s has a token's shape: sst_ and 43
// base64url characters.
func WellFormedToken(s string) bool {
	rest, ok := strings.CutPrefix(s, tokenPrefix)
	if !ok || len(s) != tokenLength {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(rest)
	return err == nil
}

// TokenLive reports whether a session's token still opens its routes at
// now.
func TokenLive(created time.Time, claim *Claim, o *Outcome, now time.Time) bool {
	if o.Final() && now.After(o.ReportedAt.Add(afterFinal)) {
		return false
	}
	last := created
	if claim != nil && claim.HeartbeatAt.After(last) {
		last = claim.HeartbeatAt
	}
	return !now.After(last.Add(longest))
}
