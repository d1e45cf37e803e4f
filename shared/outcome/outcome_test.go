package outcome

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/problem"
)

var (
	created = time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	now     = created.Add(time.Hour)
)

// TestParseReport: a report read strictly, by rule, each fault naming its
// member; a message's credentials kept as [redacted].
func TestParseReport(t *testing.T) {
	for _, r := range []struct {
		rule, body string
		member     string // refused, naming it; "" accepted
	}{
		{"completed", `{"status":"completed"}`, ""},
		{"failed, with its error, runner and end", `{"status":"failed","runner":"r-1:a.b_c","error":{"code":"tests.failed","message":"3 failed"},"endedAt":"2026-12-06T09:59:30Z"}`, ""},
		{"interrupted", `{"status":"interrupted","error":{"code":"oom","message":""}}`, ""},
		{"no status", `{}`, "status"},
		{"timed_out is not reported", `{"status":"timed_out"}`, "status"},
		{"another status", `{"status":"done"}`, "status"},
		{"a runner with a space", `{"status":"completed","runner":"a b"}`, "runner"},
		{"a runner of 129", `{"status":"completed","runner":"` + strings.Repeat("r", 129) + `"}`, "runner"},
		{"an empty runner", `{"status":"completed","runner":""}`, "runner"},
		{"an error on completed", `{"status":"completed","error":{"code":"x","message":"y"}}`, "error"},
		{"a code in capitals", `{"status":"failed","error":{"code":"Tests","message":"y"}}`, "error.code"},
		{"a code of 101", `{"status":"failed","error":{"code":"` + strings.Repeat("c", 101) + `","message":"y"}}`, "error.code"},
		{"an error without its message", `{"status":"failed","error":{"code":"x"}}`, "error.message"},
		{"a message of 4,097", `{"status":"failed","error":{"code":"x","message":"` + strings.Repeat("é", 4097) + `"}}`, "error.message"},
		{"an end a minute and a second ahead", `{"status":"completed","endedAt":"2026-12-06T10:01:01Z"}`, "endedAt"},
		{"an end before the start", `{"status":"completed","endedAt":"2026-12-06T08:59:59Z"}`, "endedAt"},
		{"an end not RFC 3339", `{"status":"completed","endedAt":"yesterday"}`, "endedAt"},
		{"an unknown member", `{"status":"completed","extra":1}`, "extra"},
	} {
		t.Run(r.rule, func(t *testing.T) {
			got, err := ParseReport([]byte(r.body), created, now)
			if r.member == "" {
				if err != nil || got == nil {
					t.Fatalf("%v", err)
				}
				return
			}
			if pe, ok := errors.AsType[*problem.Error](err); !ok || pe.Code != problem.InvalidRequest || !strings.HasPrefix(pe.Detail, r.member+" ") {
				t.Errorf("%v, want invalid_request naming %s", err, r.member)
			}
		})
	}
	got, err := ParseReport([]byte(`{"status":"failed","error":{"code":"auth","message":"token ghp_abc123 refused"},"endedAt":"2026-12-06T09:30:00.900+01:00"}`), created.Add(-time.Hour), now)
	if err != nil || got.Error.Message != "token [redacted] refused" || !got.EndedAt.Equal(time.Date(2026, 12, 6, 8, 30, 0, 0, time.UTC)) {
		t.Errorf("%+v %v", got, err)
	}
	// A start is answered in whole seconds: an end at the answered start
	// passes, whatever the start's milliseconds.
	if _, err := ParseReport([]byte(`{"status":"completed","endedAt":"2026-12-06T09:00:00Z"}`), created.Add(248*time.Millisecond), now); err != nil {
		t.Errorf("an end at the start as answered: %v", err)
	}
}

// TestJudge: the claim's runner alone reports; the first report wins; the
// same report again writes nothing; a different one is refused with the
// recorded one; a report replaces a timed_out mark, once.
func TestJudge(t *testing.T) {
	failed := &Report{Status: Failed, Runner: "r1", Error: &Error{Code: "x", Message: "y"}}
	claim := &Claim{Runner: "r1", ClaimedAt: created, HeartbeatAt: created}
	d, err := Judge(failed, nil, claim, now)
	if err != nil || !d.Write || d.Outcome.Status != Failed || d.Outcome.Revision != 1 || !d.Outcome.EndedAt.Equal(now) || !d.Outcome.ReportedAt.Equal(now) {
		t.Fatalf("the first: %+v %v", d.Outcome, err)
	}
	recorded := d.Outcome
	if d, err := Judge(failed, recorded, claim, now.Add(time.Minute)); err != nil || d.Write || d.Outcome != recorded {
		t.Errorf("the same again: %+v %v", d, err)
	}
	other := &Report{Status: Completed, Runner: "r1"}
	if d, err := Judge(other, recorded, claim, now); err != ErrRecorded || d.Write || d.Outcome != recorded {
		t.Errorf("another: %+v %v", d, err)
	}
	if _, err := Judge(&Report{Status: Completed, Runner: "r2"}, nil, claim, now); err != ErrClaimed {
		t.Errorf("another runner: %v", err)
	}
	if _, err := Judge(&Report{Status: Completed}, nil, claim, now); err != ErrClaimed {
		t.Errorf("no runner on a claimed session: %v", err)
	}
	if d, err := Judge(&Report{Status: Completed}, nil, nil, now); err != nil || !d.Write {
		t.Errorf("unclaimed: %+v %v", d, err)
	}
	mark := Marked(0, now)
	if mark.Final() || mark.Status != TimedOut || mark.Error.Code != NoOutcomeReported || mark.Revision != 1 {
		t.Errorf("the mark: %+v", mark)
	}
	d, err = Judge(other, mark, claim, now.Add(time.Hour))
	if err != nil || !d.Write || d.Outcome.Status != Completed || d.Outcome.Revision != 2 || !d.Outcome.Final() {
		t.Fatalf("after the mark: %+v %v", d.Outcome, err)
	}
	if _, err := Judge(failed, d.Outcome, claim, now.Add(time.Hour)); err != ErrRecorded {
		t.Errorf("a second replacement: %v", err)
	}
	ended := &Report{Status: Completed, EndedAt: now.Add(-time.Minute)}
	d, _ = Judge(ended, nil, nil, now)
	if _, err := Judge(&Report{Status: Completed, EndedAt: now.Add(-2 * time.Minute)}, d.Outcome, nil, now); err != ErrRecorded {
		t.Errorf("the same status, another end: %v", err)
	}
	if d2, err := Judge(&Report{Status: Completed}, d.Outcome, nil, now); err != nil || d2.Write {
		t.Errorf("the same status, no end: %+v %v", d2, err)
	}
}

// TestClaimFor: the first claim records its runner; the same runner's is
// a heartbeat; another runner's is refused with the claim; a final
// outcome ends the claims, a timed_out mark does not.
func TestClaimFor(t *testing.T) {
	d, err := ClaimFor("r1", nil, nil, now)
	if err != nil || !d.Write || d.Claim.Runner != "r1" || !d.Claim.ClaimedAt.Equal(now) || !d.Claim.HeartbeatAt.Equal(now) {
		t.Fatalf("%+v %v", d, err)
	}
	later := now.Add(10 * time.Minute)
	beat, err := ClaimFor("r1", d.Claim, nil, later)
	if err != nil || !beat.Write || !beat.Claim.ClaimedAt.Equal(now) || !beat.Claim.HeartbeatAt.Equal(later) {
		t.Errorf("the heartbeat: %+v %v", beat.Claim, err)
	}
	if again, err := ClaimFor("r1", d.Claim, nil, now.Add(500*time.Millisecond)); err != nil || again.Write || again.Claim != d.Claim {
		t.Errorf("the same second's claim again: %+v %v", again, err)
	}
	if other, err := ClaimFor("r2", d.Claim, nil, later); err != ErrClaimed || other.Write || other.Claim != d.Claim {
		t.Errorf("another runner: %+v %v", other, err)
	}
	if _, err := ClaimFor("r1", d.Claim, &Outcome{Status: Completed}, later); err != ErrEnded {
		t.Errorf("after a final outcome: %v", err)
	}
	if _, err := ClaimFor("r1", d.Claim, Marked(0, later), later); err != nil {
		t.Errorf("after a timed_out mark: %v", err)
	}
}

// TestDeadlineAndToken: the deadline runs from the start or the last
// heartbeat; the token lives while there is no final outcome and a day
// after one, and never past 8 days after the start or the last
// heartbeat.
func TestDeadlineAndToken(t *testing.T) {
	timeout := 180 * time.Minute
	if got := Deadline(created, nil, timeout); !got.Equal(created.Add(timeout)) {
		t.Errorf("from the start: %v", got)
	}
	beat := &Claim{Runner: "r", ClaimedAt: created, HeartbeatAt: created.Add(time.Hour)}
	if got := Deadline(created, beat, timeout); !got.Equal(created.Add(time.Hour + timeout)) {
		t.Errorf("from the heartbeat: %v", got)
	}
	final := &Outcome{Status: Completed, ReportedAt: created.Add(2 * time.Hour)}
	for _, r := range []struct {
		rule  string
		claim *Claim
		o     *Outcome
		at    time.Time
		live  bool
	}{
		{"running", nil, nil, created.Add(time.Hour), true},
		{"8 days after the start", nil, nil, created.Add(8 * 24 * time.Hour), true},
		{"past 8 days after the start", nil, nil, created.Add(8*24*time.Hour + time.Second), false},
		{"8 days after the last heartbeat", beat, nil, created.Add(time.Hour + 8*24*time.Hour), true},
		{"a day after a final outcome", nil, final, final.ReportedAt.Add(24 * time.Hour), true},
		{"past a day after a final outcome", nil, final, final.ReportedAt.Add(24*time.Hour + time.Second), false},
		{"a day after a timed_out mark", nil, Marked(0, created.Add(3*time.Hour)), created.Add(5 * 24 * time.Hour), true},
	} {
		if got := TokenLive(created, r.claim, r.o, r.at); got != r.live {
			t.Errorf("%s: live %v", r.rule, got)
		}
	}
}

// TestToken: a session's token is sst_ and the unpadded base64url of a
// 32-byte MAC over session:v1:<id>; only that shape is well formed.
func TestToken(t *testing.T) {
	if string(TokenMessage("workspace_a")) != "session:v1:workspace_a" {
		t.Error("the message")
	}
	mac := make([]byte, 32)
	mac[0], mac[31] = 0xfb, 0xff
	tok := TokenOf(mac)
	if tok != "sst_-wAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAP8" || !WellFormedToken(tok) {
		t.Errorf("token %q", tok)
	}
	for _, bad := range []string{"", "sst_", tok[:len(tok)-1], tok + "A", "sst-" + tok[4:], "sst_" + strings.Repeat("+", 43), "sst_-wAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAP9"} {
		if WellFormedToken(bad) {
			t.Errorf("%q is well formed", bad)
		}
	}
}
