package trigger_test

import (
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// TestForSession: a run recorded with its new session carries the
// session; a manual or webhook run is keyed by it, and a manual run
// starts and is recorded at the session's creation; a slot's run keeps
// its slot, and every run keeps its status and its record's time as
// decided.
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
			trigger.Run{At: slot, SessionID: "workspace_a", Status: trigger.StatusFired, RecordedAt: at}},
		{"a manual run: keyed by its session, at its creation",
			trigger.Run{Kind: trigger.KindManual, Status: trigger.StatusFallback},
			trigger.Run{Kind: trigger.KindManual, ID: "workspace_a", At: created, SessionID: "workspace_a", Status: trigger.StatusFallback, RecordedAt: created}},
		{"a webhook run: keyed by its session, at its receipt",
			trigger.Run{Kind: trigger.KindWebhook, At: slot, Status: trigger.StatusFired, RecordedAt: at, Delivery: "d1", Event: "push"},
			trigger.Run{Kind: trigger.KindWebhook, ID: "workspace_a", At: slot, SessionID: "workspace_a", Status: trigger.StatusFired, RecordedAt: at, Delivery: "d1", Event: "push"}},
	} {
		if got := r.run.ForSession(rec); got != r.want {
			t.Errorf("%s: %+v, want %+v", r.rule, got, r.want)
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
