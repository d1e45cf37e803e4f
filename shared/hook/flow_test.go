package hook_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// TestAfterTheProof is the contract's order after the proof, one rule a
// row: a ping is 200 and starts nothing; an event the trigger does not
// list is 202 and records nothing (name.action matches the body's
// action); a delivery whose key has a run is 200 from it, paused or
// over the limit; a paused trigger is 202; over the minute's limit is
// 429 with Retry-After the seconds to the next minute, nothing recorded.
func TestAfterTheProof(t *testing.T) {
	h := harness(t)
	limit(h, "2")
	hk := newHook(t, h, func(tr *trigger.Trigger) { tr.Webhook.Events = []string{"pull_request.opened", "push"} })
	send := func(event, delivery, body string) apitest.Result {
		return deliver(h, hk.ID, hk.signed(t, "", body, github(event, delivery)), body)
	}
	opened := prBody("opened", "Fix the build")
	rows := []struct {
		rule   string
		do     func() apitest.Result
		status int
		body   string // a member that must be true, or the code
		runs   int    // the trigger's runs after it
	}{
		{"a ping is 200 and starts nothing", func() apitest.Result { return send("ping", "d0", `{"zen":"z"}`) }, 200, "ping", 0},
		{"an event not listed is 202", func() apitest.Result { return send("issues", "d1", prBody("opened", "x")) }, 202, "ignored", 0},
		{"name.action: another action is not listed", func() apitest.Result { return send("pull_request", "d2", prBody("closed", "x")) }, 202, "ignored", 0},
		{"name.action: the action listed starts a session", func() apitest.Result { return send("pull_request", "d3", opened) }, 201, "", 1},
		{"a bare name lists every action", func() apitest.Result { return send("push", "d4", `{"ref":"main"}`) }, 201, "", 2},
		{"over the minute's limit is 429", func() apitest.Result { return send("push", "d5", `{"ref":"dev"}`) }, 429, "rate_limited", 2},
		{"a redelivery is 200 from its run, over the limit", func() apitest.Result { return send("pull_request", "d3", opened) }, 200, "replayed", 2},
		{"a ping over the limit is still 200", func() apitest.Result { return send("ping", "d6", `{"zen":"y"}`) }, 200, "ping", 2},
		{"paused: a redelivery is still 200 from its run", func() apitest.Result {
			pause(t, h, hk.ID)
			return send("pull_request", "d3", opened)
		}, 200, "replayed", 2},
		{"paused: a new delivery is 202", func() apitest.Result { return send("push", "d7", `{"ref":"x"}`) }, 202, "paused", 2},
		{"paused: an event not listed is 202 ignored", func() apitest.Result { return send("issues", "d8", `{}`) }, 202, "ignored", 2},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			before := len(h.Items())
			res := r.do()
			if res.Status != r.status {
				t.Fatalf("%d %s", res.Status, res.Raw)
			}
			if r.status >= 400 && res.Code() != r.body || r.status < 400 && r.body != "" && res.Body[r.body] != true {
				t.Errorf("body %s, want %s", res.Raw, r.body)
			}
			if r.status == 429 && res.Headers["Retry-After"] != "30" {
				t.Errorf("Retry-After %q, want 30 (the clock is 30 s into the minute)", res.Headers["Retry-After"])
			}
			if got := len(runs(t, h, hk.ID)); got != r.runs {
				t.Errorf("%d runs, want %d", got, r.runs)
			}
			if r.status != 201 && len(h.Items()) != before && r.rule != "paused: a redelivery is still 200 from its run" {
				t.Errorf("%d items written", len(h.Items())-before)
			}
		})
	}
}

// pause pauses a stored trigger.
func pause(t *testing.T, h *apitest.Harness, id string) {
	t.Helper()
	h.SetTrigger(id, "active", &types.AttributeValueMemberBOOL{Value: false})
}

// TestRefusedDelivery: a start refused by its stored trigger (a prompt
// template that no longer parses) is the start's problem answer and
// records a failed webhook run; its redelivery answers the same problem
// and adds no run; a refusal does not count against the limit.
func TestRefusedDelivery(t *testing.T) {
	h := harness(t)
	limit(h, "1")
	hk := newHook(t, h, func(tr *trigger.Trigger) { tr.Prompt = "Look at {{ nope }}" })
	body := `{"ref":"main"}`
	headers := hk.signed(t, "", body, github("push", "d1"))
	first := deliver(h, hk.ID, headers, body)
	if first.Status != 400 || first.Code() != "invalid_request" {
		t.Fatalf("%d %s", first.Status, first.Raw)
	}
	rs := runs(t, h, hk.ID)
	if len(rs) != 1 || rs[0].Status != trigger.StatusFailed || rs[0].Error != "invalid_request" || rs[0].SessionID != "" || rs[0].Delivery != "d1" {
		t.Fatalf("runs %+v", rs)
	}
	again := deliver(h, hk.ID, headers, body)
	if again.Status != 400 || again.Body["detail"] != first.Body["detail"] || len(runs(t, h, hk.ID)) != 1 {
		t.Errorf("redelivered: %d %s", again.Status, again.Raw)
	}
	// Mend the prompt: a new delivery starts, the refusal not counted.
	h.SetTrigger(hk.ID, "prompt", &types.AttributeValueMemberS{Value: "Look at {{ event }}"})
	other := `{"ref":"dev"}`
	if res := deliver(h, hk.ID, hk.signed(t, "", other, github("push", "d2")), other); res.Status != 201 {
		t.Errorf("after the refusal: %d %s", res.Status, res.Raw)
	}
}

// TestRetiredAllocation: a saved allocation retired since falls back to
// the default, as the firing does: the run is fallback.
func TestRetiredAllocation(t *testing.T) {
	h := harness(t)
	hk := newHook(t, h, func(tr *trigger.Trigger) { tr.SavedAllocation = "vercel-small" })
	h.SetSettings([]settings.Parameter{{Name: "allocation/retired", Type: "StringList", Value: "vercel-small"}})
	body := `{"ref":"main"}`
	res := deliver(h, hk.ID, hk.signed(t, "", body, github("push", "d1")), body)
	if res.Status != 201 {
		t.Fatalf("%d %s", res.Status, res.Raw)
	}
	if rs := runs(t, h, hk.ID); len(rs) != 1 || rs[0].Status != trigger.StatusFallback {
		t.Errorf("runs %+v", rs)
	}
}

// TestConcurrentRedeliveries: any number of concurrent deliveries of one
// key start exactly one session and record one run, and every answer
// names that session.
func TestConcurrentRedeliveries(t *testing.T) {
	h := harness(t)
	hk := newHook(t, h, nil)
	body := prBody("opened", "Race")
	headers := hk.signed(t, "", body, github("pull_request", "d1"))
	const n = 20
	var wg sync.WaitGroup
	results := make([]apitest.Result, n)
	for i := range n {
		wg.Go(func() { results[i] = deliver(h, hk.ID, headers, body) })
	}
	wg.Wait()
	created := 0
	for _, r := range results {
		if r.Status == 201 {
			created++
		}
		if r.Status != 201 && r.Status != 200 || r.Body["sessionId"] != results[0].Body["sessionId"] {
			t.Errorf("%d %s, the first %s", r.Status, r.Raw, results[0].Raw)
		}
	}
	sessions := len(h.Sessions())
	if created != 1 || sessions != 1 || len(runs(t, h, hk.ID)) != 1 {
		t.Errorf("%d created, %d sessions, %d runs", created, sessions, len(runs(t, h, hk.ID)))
	}
}

// TestDeliveryEnvironment: a delivery's session runs in the environment
// its trigger names, and never in a default: its prompt carries a
// stranger's text.
func TestDeliveryEnvironment(t *testing.T) {
	h := harness(t)
	h.CreateEnvironment(t, map[string]string{"sub": "u1"}, `{"name":"Default","default":true}`)
	named := h.CreateEnvironment(t, map[string]string{"sub": "u1"}, `{"name":"Named"}`)
	body := prBody("opened", "Environments")
	for _, r := range []struct {
		name, environmentID, want string
	}{
		{"no default", "", "<nil>"},
		{"the named one", named, named},
	} {
		hk := newHook(t, h, func(tr *trigger.Trigger) { tr.EnvironmentID = r.environmentID })
		res := deliver(h, hk.ID, hk.signed(t, "", body, github("pull_request", "d-"+strings.ReplaceAll(r.name, " ", "-"))), body)
		if res.Status != 201 {
			t.Fatalf("%s: %d %s", r.name, res.Status, res.Raw)
		}
		look := h.Do(apitest.Call{Method: "GET", Path: "/v1/sessions/" + res.Body["sessionId"].(string) + "/allocation", Claims: map[string]string{"sub": "u1"}})
		got := "<nil>"
		if env, ok := look.Body["environment"].(map[string]any); ok {
			got = env["environmentId"].(string)
		}
		if res.Status != 201 || got != r.want {
			t.Errorf("%s: %d %s, environment %s", r.name, res.Status, res.Raw, got)
		}
	}
}
