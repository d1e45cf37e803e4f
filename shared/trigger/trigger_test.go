package trigger_test

import (
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/outcome"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// TestForSession: a run recorded with its new session carries the
// session; a manual or webhook run is keyed by it, and a manual run
// starts and is recorded at the session's creation; a slot's run keeps
// its slot, and every run keeps its status and its record's time as
// decided; each announced.
func TestForSession(t *testing.T) {
	slot := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	at, created := slot.Add(time.Second), slot.Add(2*time.Second)
	rec := &session.Record{SessionID: "workspace_a", CreatedAt: created}
	for _, r := range []struct {
		rule string
		run  trigger.Run
		want trigger.Run
	}{
		{"a slot's run: its slot, no id",
			trigger.Run{At: slot, Status: trigger.StatusFired, RecordedAt: at},
			trigger.Run{At: slot, SessionID: "workspace_a", Announced: true, Status: trigger.StatusFired, RecordedAt: at}},
		{"a manual run: keyed by its session, at its creation",
			trigger.Run{Kind: trigger.KindManual, Status: trigger.StatusFallback},
			trigger.Run{Kind: trigger.KindManual, ID: "workspace_a", At: created, SessionID: "workspace_a", Announced: true, Status: trigger.StatusFallback, RecordedAt: created}},
		{"a webhook run: keyed by its session, at its receipt",
			trigger.Run{Kind: trigger.KindWebhook, At: slot, Status: trigger.StatusFired, RecordedAt: at, Delivery: "d1", Event: "push"},
			trigger.Run{Kind: trigger.KindWebhook, ID: "workspace_a", At: slot, SessionID: "workspace_a", Announced: true, Status: trigger.StatusFired, RecordedAt: at, Delivery: "d1", Event: "push"}},
	} {
		if got := r.run.ForSession(rec); got != r.want {
			t.Errorf("%s: %+v, want %+v", r.rule, got, r.want)
		}
	}
}

// TestInOutcome: running is an announced run with no outcome yet (never
// a run recorded before v7, or one that started nothing); a status is a
// run whose outcome has it; running and the statuses are the filters.
func TestInOutcome(t *testing.T) {
	ended := &outcome.Outcome{Status: outcome.Completed, Revision: 1}
	for _, r := range []struct {
		rule   string
		run    trigger.Run
		filter string
		want   bool
	}{
		{"an announced run without outcome is running", trigger.Run{Announced: true}, trigger.Running, true},
		{"a run recorded before v7 is not running", trigger.Run{SessionID: "workspace_a"}, trigger.Running, false},
		{"a run with an outcome is not running", trigger.Run{Announced: true, Outcome: ended}, trigger.Running, false},
		{"a run with the status", trigger.Run{Announced: true, Outcome: ended}, outcome.Completed, true},
		{"a run with another status", trigger.Run{Announced: true, Outcome: ended}, outcome.Failed, false},
		{"a running run has no status", trigger.Run{Announced: true}, outcome.Completed, false},
	} {
		if got := r.run.InOutcome(r.filter); got != r.want {
			t.Errorf("%s: %v", r.rule, got)
		}
	}
	for f, want := range map[string]bool{"running": true, "completed": true, "failed": true, "interrupted": true, "timed_out": true, "": false, "Running": false, "fired": false} {
		if trigger.ValidOutcomeFilter(f) != want {
			t.Errorf("filter %q: %v", f, !want)
		}
	}
}

// TestParked: a stopped trigger's run is its next slot, failed with the
// code, recorded when it stopped.
func TestParked(t *testing.T) {
	next := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	tr := &trigger.Trigger{ID: "trg_a", NextRunAt: next}
	want := trigger.Run{At: next, Status: trigger.StatusFailed, Error: "invalid_request", RecordedAt: next.Add(time.Minute)}
	if got := tr.Parked("invalid_request", next.Add(time.Minute)); got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
}
