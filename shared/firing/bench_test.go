package firing_test

import (
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/shared/firing"
)

// everyMinute is a trigger body that is due every minute.
var everyMinute = apitest.Body(map[string]any{
	"schedule":   map[string]any{"cron": "* * * * *"},
	"repository": map[string]any{"type": "github", "repo": "acme/app"},
	"agent":      map[string]any{"mode": "code", "model": "anthropic/claude"},
	"prompt":     "Triage new issues.",
}, nil)

// BenchmarkFire: one invocation that fires one due trigger, from the due
// index to the recorded run, on the embedded endpoint (settings are reread
// at every call here).
func BenchmarkFire(b *testing.B) {
	h := apitest.New(b, nil)
	h.Triggers.Now = func() time.Time { return created }
	h.CreateTrigger(b, owner, everyMinute)
	at := created.Truncate(time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		at = at.Add(time.Minute)
		h.Firing.Now = func() time.Time { return at }
		sum, err := h.Firing.Handle(b.Context(), events.EventBridgeEvent{Time: at})
		if err != nil || sum != (firing.Summary{Due: 1, Fired: 1}) {
			b.Fatalf("%+v %v", sum, err)
		}
	}
}
