package ledger

import (
	"strings"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
)

var now = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// ledgerRow is a completed row of the current writer for the claim's
// request, changed by set.
func ledgerRow(set func(*Row)) *Row {
	l := &Row{
		UserID: "u1", OperationKey: "k", Intent: IntentCreateSession, Fingerprint: "fp",
		Status: StatusCompleted, SessionID: "workspace_x", SandboxID: allocation.SandboxID("workspace_x"),
		SandboxKind: "isolated", SandboxProvider: "cloudflare-containers", SandboxAllocation: "cloudflare-containers-standard-4",
		CreatedAt: now.Add(-time.Hour).Format(session.TimeFormat), ExpiresAt: now.Add(23 * time.Hour),
	}
	if set != nil {
		set(l)
	}
	return l
}

// lapsedRow is an older writer's in-progress row whose lease has lapsed.
func lapsedRow(set func(*Row)) *Row {
	return ledgerRow(func(l *Row) {
		l.Status, l.LeaseUntil = StatusInProgress, now.Add(-time.Minute)
		if set != nil {
			set(l)
		}
	})
}

// rowSession is the row's session as read, of user u1 in org.
func rowSession(user, org string) *session.Record {
	return &session.Record{SessionID: "workspace_x", UserID: user, OrgID: org}
}

var stepNames = map[Step]string{Create: "Create", Own: "Own", Refuse: "Refuse", CheckSession: "CheckSession",
	ReadSession: "ReadSession", Afresh: "Afresh", Replay: "Replay"}

func names(steps []Step) string {
	var s []string
	for _, st := range steps {
		s = append(s, stepNames[st])
	}
	return strings.Join(s, " → ")
}

// TestRules is the operation ledger of the contract's start route, rule
// by rule and in its order: each row is a row a start met (and, when the
// rules ask for it, the row's session as read), and the steps the start
// takes: Judge's verdict, then JudgeSession's. The claim is user u1's,
// without org or bot, for fingerprint fp, under the built-in settings
// unless a row says otherwise. Rows named "order" break several rules:
// the first in the contract's order answers.
func TestRules(t *testing.T) {
	legacyShared := "usr-" + strings.Repeat("a", 48)
	rows := []struct {
		rule string
		cfg  allocation.Config
		row  *Row
		any  bool            // Claim.AnyRequest
		mine string          // the session this start wrote with its row
		rec  *session.Record // the row's session, nil when it does not exist
		want []Step          // Judge's step, then JudgeSession's
		code problem.Code    // the refusal's
		wait time.Duration   // the refusal's Retry-After
	}{
		{rule: "absent: no row, a new session", row: nil, want: []Step{Create}},
		{rule: "absent: a row whose expiresAt has passed, still readable", row: ledgerRow(func(l *Row) { l.ExpiresAt = now.Add(-time.Second) }), want: []Step{Create}},
		{rule: "absent: a row expires at its expiresAt", row: ledgerRow(func(l *Row) { l.ExpiresAt = now }), want: []Step{Create}},
		{rule: "absent before rule 1: an expired row of another org", row: ledgerRow(func(l *Row) { l.OrgID, l.ExpiresAt = "o1", now.Add(-time.Second) }), want: []Step{Create}},
		{rule: "a lost answer: the row names this start's own session, which is new", row: ledgerRow(nil), mine: "workspace_x", want: []Step{Own}},
		{rule: "a row naming another session is not this start's", row: ledgerRow(nil), mine: "workspace_mine", rec: rowSession("u1", ""), want: []Step{ReadSession, Replay}},

		{rule: "1: another org", row: ledgerRow(func(l *Row) { l.OrgID = "o1" }), want: []Step{Refuse}, code: problem.OperationKeyReuseMismatch},
		{rule: "1: another bot", row: ledgerRow(func(l *Row) { l.BotID = "b1" }), want: []Step{Refuse}, code: problem.OperationKeyReuseMismatch},
		{rule: "1: another intent", row: ledgerRow(func(l *Row) { l.Intent = "delete_session" }), want: []Step{Refuse}, code: problem.OperationKeyReuseMismatch},
		{rule: "2: recorded kind shared, never a replay", row: ledgerRow(func(l *Row) { l.SandboxKind, l.SandboxAllocation = "shared", "" }), want: []Step{Refuse}, code: problem.SandboxAllocationRetired},
		{rule: "2: recorded allocation cloudflare-shared", row: ledgerRow(func(l *Row) { l.SandboxAllocation = "cloudflare-shared" }), want: []Step{Refuse}, code: problem.SandboxAllocationRetired},
		{rule: "2: an allocation retired by the settings", cfg: allocation.Config{RetiredAllocations: []string{"vercel-small"}},
			row: ledgerRow(func(l *Row) { l.SandboxProvider, l.SandboxAllocation = "vercel", "vercel-small" }), want: []Step{Refuse}, code: problem.SandboxAllocationRetired},
		{rule: "3: a legacy shared id with no kind is on the retired runtime", row: ledgerRow(func(l *Row) {
			l.SandboxID, l.SandboxKind, l.SandboxProvider, l.SandboxAllocation = legacyShared, "", "", ""
		}), want: []Step{Refuse}, code: problem.SandboxRuntimeRetired},
		{rule: "3: a recorded cloudflare provider", row: ledgerRow(func(l *Row) { l.SandboxProvider, l.SandboxAllocation = "cloudflare", "" }), want: []Step{Refuse}, code: problem.SandboxRuntimeRetired},
		{rule: "3: the provider of the recorded allocation", row: ledgerRow(func(l *Row) { l.SandboxProvider, l.SandboxAllocation = "", "cloudflare-single" }), want: []Step{Refuse}, code: problem.SandboxRuntimeRetired},
		{rule: "3: a provider retired by the settings", cfg: allocation.Config{RetiredProviders: []string{"vercel"}},
			row: ledgerRow(func(l *Row) { l.SandboxProvider, l.SandboxAllocation = "", "vercel-small" }), want: []Step{Refuse}, code: problem.SandboxRuntimeRetired},
		{rule: "4: in progress with a live lease", row: ledgerRow(func(l *Row) { l.Status, l.LeaseUntil = StatusInProgress, now.Add(30*time.Second) }), want: []Step{Refuse}, code: problem.CreationInProgress, wait: 30 * time.Second},
		{rule: "5: a lapsed lease, no session: afresh with the recorded id, whatever the fingerprint", row: lapsedRow(func(l *Row) { l.Fingerprint = "other" }), want: []Step{CheckSession, Afresh}},
		{rule: "5: a lease that ends now has lapsed", row: lapsedRow(func(l *Row) { l.LeaseUntil = now }), want: []Step{CheckSession, Afresh}},
		{rule: "5: in progress with no lease (an older writer's) has lapsed", row: lapsedRow(func(l *Row) { l.LeaseUntil = time.Time{} }), want: []Step{CheckSession, Afresh}},
		{rule: "5: failed, no session: afresh", row: ledgerRow(func(l *Row) { l.Status = StatusFailed }), want: []Step{CheckSession, Afresh}},
		{rule: "5 then 7: a lapsed lease, the session exists: replay", row: lapsedRow(nil), rec: rowSession("u1", ""), want: []Step{CheckSession, Replay}},
		{rule: "5 then 6: failed, the session exists, another request", row: ledgerRow(func(l *Row) { l.Status, l.Fingerprint = StatusFailed, "other" }),
			rec: rowSession("u1", ""), want: []Step{CheckSession, Refuse}, code: problem.OperationKeyPayloadMismatch},
		{rule: "5 then 7: the session is another user's", row: lapsedRow(nil), rec: rowSession("u9", ""), want: []Step{CheckSession, Refuse}, code: problem.NotFound},
		{rule: "6: another fingerprint, refused before the session is read", row: ledgerRow(func(l *Row) { l.Fingerprint = "other" }), want: []Step{Refuse}, code: problem.OperationKeyPayloadMismatch},
		{rule: "7: replay", row: ledgerRow(nil), rec: rowSession("u1", ""), want: []Step{ReadSession, Replay}},
		{rule: "7: the session is gone", row: ledgerRow(nil), want: []Step{ReadSession, Refuse}, code: problem.NotFound},
		{rule: "7: a row naming another user's session is as if it were gone", row: ledgerRow(nil), rec: rowSession("u9", ""), want: []Step{ReadSession, Refuse}, code: problem.NotFound},
		{rule: "7: a row naming a session of another org is as if it were gone", row: ledgerRow(nil), rec: rowSession("u1", "o2"), want: []Step{ReadSession, Refuse}, code: problem.NotFound},
		{rule: "an unknown status is judged like completed", row: ledgerRow(func(l *Row) { l.Status = "paused" }), rec: rowSession("u1", ""), want: []Step{ReadSession, Replay}},

		{rule: "any request: another fingerprint replays", any: true, row: ledgerRow(func(l *Row) { l.Fingerprint = "other" }), rec: rowSession("u1", ""), want: []Step{ReadSession, Replay}},
		{rule: "any request: 4 does not apply, a live lease replays", any: true, row: ledgerRow(func(l *Row) { l.Status, l.LeaseUntil = StatusInProgress, now.Add(time.Minute) }), rec: rowSession("u1", ""), want: []Step{ReadSession, Replay}},
		{rule: "any request: 5 does not apply, a failed row without its session is not run afresh", any: true, row: ledgerRow(func(l *Row) { l.Status = StatusFailed }), want: []Step{ReadSession, Refuse}, code: problem.NotFound},
		{rule: "any request: 1 applies", any: true, row: ledgerRow(func(l *Row) { l.OrgID = "o1" }), want: []Step{Refuse}, code: problem.OperationKeyReuseMismatch},
		{rule: "any request: 2 applies", any: true, row: ledgerRow(func(l *Row) { l.SandboxAllocation = "cloudflare-shared" }), want: []Step{Refuse}, code: problem.SandboxAllocationRetired},
		{rule: "any request: 3 applies", any: true, row: ledgerRow(func(l *Row) { l.SandboxProvider, l.SandboxAllocation = "cloudflare", "" }), want: []Step{Refuse}, code: problem.SandboxRuntimeRetired},
		{rule: "any request: 7's session gone", any: true, row: ledgerRow(nil), rec: rowSession("u9", ""), want: []Step{ReadSession, Refuse}, code: problem.NotFound},

		{rule: "order: 1 before 2", row: ledgerRow(func(l *Row) { l.OrgID, l.SandboxKind = "o1", "shared" }), want: []Step{Refuse}, code: problem.OperationKeyReuseMismatch},
		{rule: "order: 2 before 3", row: ledgerRow(func(l *Row) { l.SandboxKind, l.SandboxProvider = "shared", "cloudflare" }), want: []Step{Refuse}, code: problem.SandboxAllocationRetired},
		{rule: "order: 2 before 4", row: ledgerRow(func(l *Row) {
			l.Status, l.LeaseUntil, l.SandboxKind = StatusInProgress, now.Add(time.Minute), "shared"
		}), want: []Step{Refuse}, code: problem.SandboxAllocationRetired},
		{rule: "order: 3 before 4", row: ledgerRow(func(l *Row) {
			l.Status, l.LeaseUntil = StatusInProgress, now.Add(time.Minute)
			l.SandboxID, l.SandboxKind, l.SandboxProvider, l.SandboxAllocation = "ses-"+strings.Repeat("b", 48), "", "", ""
		}), want: []Step{Refuse}, code: problem.SandboxRuntimeRetired},
		{rule: "order: 3 before 5", row: lapsedRow(func(l *Row) { l.SandboxProvider, l.SandboxAllocation = "cloudflare", "" }), want: []Step{Refuse}, code: problem.SandboxRuntimeRetired},
		{rule: "order: 4 before 6", row: ledgerRow(func(l *Row) {
			l.Status, l.LeaseUntil, l.Fingerprint = StatusInProgress, now.Add(time.Minute), "other"
		}), want: []Step{Refuse}, code: problem.CreationInProgress},
		{rule: "order: 6 before 7's read", row: ledgerRow(func(l *Row) { l.Fingerprint = "other" }), rec: rowSession("u9", ""), want: []Step{Refuse}, code: problem.OperationKeyPayloadMismatch},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			policy, _ := allocation.NewPolicy(r.cfg)
			c := Claim{UserID: "u1", Fingerprint: "fp", Mine: r.mine, Policy: policy, Now: now, AnyRequest: r.any}
			v := Judge(r.row, c)
			got := []Step{v.Step}
			if v.Step == CheckSession || v.Step == ReadSession {
				v = JudgeSession(r.row, c, r.rec)
				got = append(got, v.Step)
			}
			if names(got) != names(r.want) {
				t.Fatalf("%s, want %s (%v)", names(got), names(r.want), v.Err)
			}
			if code := problem.CodeOf(v.Err); v.Err != nil && code != r.code || v.Err == nil && r.code != "" {
				t.Errorf("refused with %v, want %q", v.Err, r.code)
			}
			if pe, _ := v.Err.(*problem.Error); r.wait != 0 && (pe == nil || pe.RetryAfter != r.wait) {
				t.Errorf("Retry-After of %#v, want %s", v.Err, r.wait)
			}
		})
	}
}

// TestReplaced is rule 5's condition, as the start applies it to the row
// read again once rule 5 found its session: a row that differs in its
// status, fingerprint, session id or lease is another start's, and is
// the one to judge; one gone, expired, or the same in those four is not.
func TestReplaced(t *testing.T) {
	old := lapsedRow(nil)
	rows := []struct {
		rule     string
		fresh    *Row
		replaced bool
	}{
		{"the same row", lapsedRow(nil), false},
		{"the row is gone", nil, false},
		{"the row has expired", lapsedRow(func(l *Row) { l.Status, l.ExpiresAt = StatusCompleted, now }), false},
		{"another status", lapsedRow(func(l *Row) { l.Status = StatusCompleted }), true},
		{"another fingerprint", lapsedRow(func(l *Row) { l.Fingerprint = "other" }), true},
		{"another session id", lapsedRow(func(l *Row) { l.SessionID = "workspace_y" }), true},
		{"another lease", lapsedRow(func(l *Row) { l.LeaseUntil = now.Add(time.Second) }), true},
		{"no lease", lapsedRow(func(l *Row) { l.LeaseUntil = time.Time{} }), true},
		{"what rule 5 does not condition on", lapsedRow(func(l *Row) { l.SandboxID, l.CreatedAt = "", "" }), false},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			if got := Replaced(old, r.fresh, now); got != r.replaced {
				t.Errorf("Replaced %t, want %t", got, r.replaced)
			}
		})
	}
}
