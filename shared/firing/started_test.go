package firing_test

import (
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
)

// TestStartedBy: a session a trigger starts keeps the run that started it
// in its metadata (contract v7, the trigger section): a slot's with its
// slot and the run's key in the trigger's history, a run-now's as a
// manual run keyed by the session; a session started on its own has
// none.
func TestStartedBy(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	id := newTrigger(t, h, "*/5 * * * *", nil)
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	if sum, err := fire(t, h, slot, slot); err != nil || sum.Fired != 1 {
		t.Fatalf("%+v %v", sum, err)
	}
	scheduled := h.Session(read(t, h, id)["lastSessionId"].(string))
	if tr := scheduled.Trigger; tr == nil || tr.ID != id || tr.Kind != "scheduled" || !tr.Slot.Equal(slot) || tr.RunKey != "RUN#2026-11-30T10:05:00.000Z" {
		t.Errorf("a slot's session: %+v", tr)
	}
	now := h.Do(apitest.Call{Method: "POST", Path: "/v1/triggers/" + id + "/run", Claims: owner})
	if now.Status != 201 {
		t.Fatalf("run now: %d %s", now.Status, now.Raw)
	}
	sid := now.Body["session"].(map[string]any)["sessionId"].(string)
	manual := h.Session(sid)
	if tr := manual.Trigger; tr == nil || tr.ID != id || tr.Kind != "manual" || !tr.Slot.Equal(manual.CreatedAt.Truncate(time.Second)) ||
		tr.RunKey != "RUN#"+manual.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z")+"#"+sid {
		t.Errorf("a run-now's session: %+v", tr)
	}
	own := h.Do(apitest.Call{Method: "POST", Path: "/v1/sessions", Claims: owner, Body: `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"m"}}`})
	if own.Status != 201 || h.Session(own.Body["sessionId"].(string)).Trigger != nil {
		t.Errorf("a session started on its own: %d %s", own.Status, own.Raw)
	}
}
