package announce

import (
	"encoding/json/v2"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/outcome"
	"github.com/cloud-agent/control-plane/shared/session"
)

var created = time.Date(2026, 12, 6, 10, 0, 0, 123e6, time.UTC)

func newSession() *session.Record {
	a, _ := allocation.ByName(allocation.ContainersStandard4)
	return &session.Record{SessionID: "workspace_a", SchemaVersion: 2, UserID: "u1", OrgID: "o1", CreatedOnPlatform: "scheduled", CreatedAt: created,
		Sandbox: session.Sandbox{ID: allocation.SandboxID("workspace_a"), Kind: allocation.KindIsolated, Provider: a.Provider(), ProviderStored: true, Allocation: a}}
}

func withOutcome(status string, revision int) *session.Record {
	rec := newSession()
	rec.Outcome = &outcome.Outcome{Status: status, EndedAt: created, ReportedAt: created, Revision: revision}
	return rec
}

// TestOf: a new session announces Session Started; a recorded outcome of
// a later revision Session Ended; a claim, a heartbeat, the same outcome
// written again, a delete, another item and a legacy session nothing.
func TestOf(t *testing.T) {
	legacy := newSession()
	legacy.Sandbox.Allocation, _ = allocation.ByName(allocation.CloudflareShared)
	claimed := newSession()
	claimed.Claim = &outcome.Claim{Runner: "r1", ClaimedAt: created, HeartbeatAt: created}
	for _, r := range []struct {
		rule      string
		old, next *session.Record
		want      string
	}{
		{"a new session", nil, newSession(), Started},
		{"a new legacy session", nil, legacy, ""},
		{"a delete, or another item", newSession(), nil, ""},
		{"a claim or a heartbeat", newSession(), claimed, ""},
		{"the first outcome", claimed, withOutcome(outcome.Completed, 1), Ended},
		{"a timed_out mark", newSession(), withOutcome(outcome.TimedOut, 1), Ended},
		{"a report replacing the mark", withOutcome(outcome.TimedOut, 1), withOutcome(outcome.Failed, 2), Ended},
		{"the outcome unchanged", withOutcome(outcome.Completed, 1), withOutcome(outcome.Completed, 1), ""},
	} {
		if got := Of(r.old, r.next); got != r.want {
			t.Errorf("%s: %q, want %q", r.rule, got, r.want)
		}
	}
}

// TestDetails: the details are the contract's, member for member; no
// prompt, no variable, nothing but the launch's token.
func TestDetails(t *testing.T) {
	rec := newSession()
	rec.Environment = &session.EnvironmentRef{ID: "env_a", Name: "Node", Version: 3}
	rec.Trigger = &session.TriggerRef{ID: "trg_a", Kind: "scheduled", Slot: time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC), RunKey: "RUN#x"}
	rec.Launch = &session.Launch{Prompt: new("secret prompt")}
	b, _ := json.Marshal(StartedOf(rec, "https://api.example", "sst_t"))
	want := `{"sessionId":"workspace_a","sequence":1,"owner":{"userId":"u1","orgId":"o1","botId":null},"createdOnPlatform":"scheduled",` +
		`"createdAt":"2026-12-06T10:00:00Z","sandbox":{"id":"` + rec.Sandbox.ID + `","kind":"isolated","provider":"cloudflare-containers",` +
		`"allocation":"cloudflare-containers-standard-4"},"environment":{"environmentId":"env_a","version":3},` +
		`"trigger":{"triggerId":"trg_a","kind":"scheduled","slot":"2026-12-06T10:00:00Z"},` +
		`"launch":{"url":"https://api.example/v1/runtime/sessions/workspace_a","token":"sst_t"}}`
	if string(b) != want {
		t.Errorf("Session Started\n got %s\nwant %s", b, want)
	}
	rec.Outcome = &outcome.Outcome{Status: outcome.TimedOut, Error: &outcome.Error{Code: "no_outcome_reported", Message: "m"},
		EndedAt: created, ReportedAt: created, Revision: 1}
	b, _ = json.Marshal(EndedOf(rec))
	want = `{"sessionId":"workspace_a","sequence":2,"owner":{"userId":"u1","orgId":"o1","botId":null},` +
		`"trigger":{"triggerId":"trg_a","kind":"scheduled","slot":"2026-12-06T10:00:00Z"},"sandbox":{"id":"` + rec.Sandbox.ID + `"},` +
		`"outcome":{"status":"timed_out","error":{"code":"no_outcome_reported","message":"m"},"endedAt":"2026-12-06T10:00:00Z","reportedAt":"2026-12-06T10:00:00Z"},"final":false}`
	if string(b) != want {
		t.Errorf("Session Ended\n got %s\nwant %s", b, want)
	}
	rec.Outcome.Status, rec.Outcome.Revision = outcome.Completed, 2
	if d := EndedOf(rec); !d.Final || d.Sequence != 3 {
		t.Errorf("a report after the mark: %+v", d)
	}
	rec.Trigger, rec.Environment, rec.CreatedOnPlatform = nil, nil, ""
	if d := StartedOf(rec, "u", "t"); d.Trigger != nil || d.Environment != nil || d.CreatedOnPlatform != nil {
		t.Errorf("without them: %+v", d)
	}
}
