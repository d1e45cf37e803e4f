package firing_test

import (
	"context"
	"encoding/json/v2"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/outcome"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/settings"
)

// The sweep's sessions: one the API starts at created (10:00:30), one a
// daily trigger's slot starts at slotStart (10:05).
var slotStart = time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)

// sweepSetup is the firing's harness with a session the API started at
// created and one a trigger's slot started at slotStart; it returns their
// ids and the trigger's.
func sweepSetup(t *testing.T, h *apitest.Harness) (own, scheduled, trigger string) {
	t.Helper()
	setup(t, h)
	trigger = newTrigger(t, h, "5 10 * * *", nil)
	h.Start.Now = func() time.Time { return slotStart }
	if sum, err := fire(t, h, slotStart, slotStart); err != nil || sum != (firing.Summary{Due: 1, Fired: 1}) {
		t.Fatalf("%+v %v", sum, err)
	}
	return startOwn(t, h), read(t, h, trigger)["lastSessionId"].(string), trigger
}

// startOwn starts a session through the API at created and returns its
// id.
func startOwn(t *testing.T, h *apitest.Harness) string {
	t.Helper()
	h.Start.Now = func() time.Time { return created }
	r := h.Do(apitest.Call{Method: "POST", Path: "/v1/sessions", Claims: owner, Body: `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"m"}}`})
	if r.Status != 201 {
		t.Fatalf("start: %d %s", r.Status, r.Raw)
	}
	return r.Body["sessionId"].(string)
}

// liveEntry is a session's live entry, in DynamoDB JSON; "" when it has
// none.
func liveEntry(t *testing.T, h *apitest.Harness, id string) string {
	t.Helper()
	for _, it := range h.Items() {
		if strings.Contains(it, `"PK":{"S":"SESSION#`+id+`"}`) && strings.Contains(it, `"SK":{"S":"LIVE"}`) {
			return it
		}
	}
	return ""
}

var liveShardAttr = regexp.MustCompile(`"dueShard":\{"S":"LIVE#([0-9]+)"\}`)

// liveShard is the shard of a session's live entry.
func liveShard(t *testing.T, h *apitest.Harness, id string) int {
	t.Helper()
	m := liveShardAttr.FindStringSubmatch(liveEntry(t, h, id))
	if m == nil {
		t.Fatalf("%s has no live entry", id)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// marked checks that a session is marked timed_out at the event's time
// at, to the second, revision 1, and its live entry is gone.
func marked(t *testing.T, h *apitest.Harness, id string, at time.Time) {
	t.Helper()
	want := &outcome.Outcome{Status: outcome.TimedOut, Error: &outcome.Error{Code: outcome.NoOutcomeReported, Message: "No outcome was reported in time."},
		EndedAt: at.Truncate(time.Second), ReportedAt: at.Truncate(time.Second), Revision: 1}
	if got := h.Session(id).Outcome; !reflect.DeepEqual(got, want) {
		t.Errorf("%s: outcome %+v, want %+v", id, got, want)
	}
	if e := liveEntry(t, h, id); e != "" {
		t.Errorf("%s: live entry left: %s", id, e)
	}
}

// unmarked checks that a session has no outcome and its live entry.
func unmarked(t *testing.T, h *apitest.Harness, id string) {
	t.Helper()
	if got := h.Session(id).Outcome; got != nil {
		t.Errorf("%s: outcome %+v", id, got)
	}
	if liveEntry(t, h, id) == "" {
		t.Errorf("%s: no live entry", id)
	}
}

// TestSweep: a session with no outcome outcome/timeout-minutes (180)
// after its start is marked timed_out by the firing, as of the event's
// time, to the second, not a second before; a trigger's session's run is
// marked too. Once marked, it is not swept again.
func TestSweep(t *testing.T) {
	h := apitest.New(t, nil)
	own, scheduled, trigger := sweepSetup(t, h)
	deadline := created.Add(180 * time.Minute).Truncate(time.Second)
	for _, r := range []struct {
		at   time.Time
		want int
	}{
		{deadline.Add(-time.Second), 0},
		{deadline.Add(700 * time.Millisecond), 1}, // the API's session
		{slotStart.Add(180*time.Minute - time.Second), 0},
		{slotStart.Add(180*time.Minute + 1500*time.Millisecond), 1}, // the trigger's
		{slotStart.Add(5 * time.Hour), 0},                           // nothing left
	} {
		// The event 4 minutes ahead of the clock: the sweep judges, and
		// marks, as of the event's time.
		sum, err := fire(t, h, r.at, r.at.Add(-4*time.Minute))
		if err != nil || sum != (firing.Summary{TimedOut: r.want}) {
			t.Errorf("at %v: %+v %v", r.at, sum, err)
		}
		switch r.at {
		case deadline.Add(700 * time.Millisecond):
			marked(t, h, own, r.at)
			unmarked(t, h, scheduled)
		case slotStart.Add(180*time.Minute + 1500*time.Millisecond):
			marked(t, h, scheduled, r.at)
			runs := runsOf(h, trigger)
			if len(runs) != 1 || !strings.Contains(runs[0], `"status":{"S":"timed_out"}`) || !strings.Contains(runs[0], `"code":{"S":"no_outcome_reported"}`) ||
				!strings.Contains(runs[0], `"endedAt":{"S":"2026-11-30T13:05:01Z"}`) || !strings.Contains(runs[0], `"revision":{"N":"1"}`) {
				t.Errorf("the run: %v", runs)
			}
			if line := h.LastLog(); !strings.Contains(line, `"summary":{"due":0,"fired":0,"duplicates":0,"skipped":0,"fallbacks":0,"failed":0,"timedOut":1}`) {
				t.Errorf("the line: %s", line)
			}
		}
	}
}

// TestSweepOvertaken: a session whose entry a heartbeat moved after the
// sweep's query read it, or whose outcome was recorded, is not marked, and
// the invocation does not fail; the moved entry is swept once its new
// deadline passes.
func TestSweepOvertaken(t *testing.T) {
	h, p := apitest.Faulty(t)
	own, scheduled, _ := sweepSetup(t, h)
	reported := &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		"status": &types.AttributeValueMemberS{Value: "completed"}, "endedAt": &types.AttributeValueMemberS{Value: "2026-11-30T11:00:00Z"},
		"reportedAt": &types.AttributeValueMemberS{Value: "2026-11-30T11:00:00Z"}, "revision": &types.AttributeValueMemberN{Value: "1"},
	}}
	h.SetItem("SESSION#"+own, "METADATA", "metadata.outcome", reported)
	heartbeat := slotStart.Add(2 * time.Hour)
	p.Inject("TransactWriteItems", 1, faultproxy.Before(func() {
		h.SetItem("SESSION#"+scheduled, "LIVE", "nextRunAt", &types.AttributeValueMemberS{Value: heartbeat.Format(time.RFC3339)})
	}))
	// The scheduled session's shard alone, one mark at a time: the
	// heartbeat lands between its query and its mark (the first
	// transaction, or the second after the reported session's, refused,
	// when they share the shard).
	at := slotStart.Add(4 * time.Hour)
	detail, _ := json.Marshal(map[string]any{"shards": []int{liveShard(t, h, scheduled)}})
	fr := *h.Firing
	fr.Concurrency = 1
	fr.Now = func() time.Time { return at }
	marks := p.Count("TransactWriteItems")
	if sum, err := fr.Handle(context.Background(), events.EventBridgeEvent{Time: at, Detail: detail}); err != nil || sum != (firing.Summary{}) {
		t.Fatalf("%+v %v", sum, err)
	}
	if p.Count("TransactWriteItems") == marks {
		t.Error("no mark was tried")
	}
	unmarked(t, h, scheduled)

	if sum, err := fire(t, h, at, at); err != nil || sum != (firing.Summary{}) {
		t.Fatalf("a reported session: %+v %v", sum, err)
	}
	if got := h.Session(own).Outcome; got == nil || got.Status != outcome.Completed || liveEntry(t, h, own) == "" {
		t.Errorf("the reported outcome: %+v", got)
	}
	later := heartbeat.Add(180 * time.Minute)
	if sum, err := fire(t, h, later, later); err != nil || sum != (firing.Summary{TimedOut: 1}) {
		t.Fatalf("after the new deadline: %+v %v", sum, err)
	}
	marked(t, h, scheduled, later)
}

// TestSweepSetting: outcome/timeout-minutes as in force at the invocation:
// 1 minute, the most (10080, a week), and a value that is ignored (the
// built-in 180, with a warning).
func TestSweepSetting(t *testing.T) {
	for _, r := range []struct {
		value   string
		timeout time.Duration
		warned  bool
	}{
		{"1", time.Minute, false},
		{"10080", 7 * 24 * time.Hour, false},
		{"3h", 180 * time.Minute, true},
	} {
		t.Run(r.value, func(t *testing.T) {
			h := apitest.New(t, nil)
			own, _, _ := sweepSetup(t, h)
			h.SetSettings([]settings.Parameter{{Name: "outcome/timeout-minutes", Type: "String", Value: r.value}})
			early := created.Add(r.timeout - time.Second)
			if sum, err := fire(t, h, early, early); err != nil || sum.TimedOut != 0 {
				t.Fatalf("a second early: %+v %v", sum, err)
			}
			if w := strings.Contains(h.LastLog(), "outcome/timeout-minutes"); w != r.warned {
				t.Errorf("warned %t: %s", w, h.LastLog())
			}
			at := created.Add(r.timeout)
			if sum, err := fire(t, h, at, at); err != nil || sum.TimedOut == 0 {
				t.Fatalf("at the deadline: %+v %v", sum, err)
			}
			marked(t, h, own, at)
		})
	}
}

// TestSweepShare: an invocation sweeps the shards of its share only; an
// event more than 5 minutes ahead of the clock sweeps nothing.
func TestSweepShare(t *testing.T) {
	h := apitest.New(t, nil)
	own, scheduled, _ := sweepSetup(t, h)
	at := slotStart.Add(4 * time.Hour)
	if sum, err := fire(t, h, at, at.Add(-5*time.Minute-time.Second)); err != nil || sum != (firing.Summary{}) {
		t.Fatalf("ahead: %+v %v", sum, err)
	}
	unmarked(t, h, own)
	unmarked(t, h, scheduled)
	// Another session of the API's until one is in a shard of its own.
	for liveShard(t, h, scheduled) == liveShard(t, h, own) {
		own = startOwn(t, h)
	}
	shard := liveShard(t, h, own)
	detail, _ := json.Marshal(map[string]any{"shards": []int{shard}})
	h.Firing.Now = func() time.Time { return at }
	sum, err := h.Firing.Handle(context.Background(), events.EventBridgeEvent{Time: at, Detail: detail})
	if err != nil || sum != (firing.Summary{TimedOut: 1}) {
		t.Fatalf("%+v %v", sum, err)
	}
	marked(t, h, own, at)
	unmarked(t, h, scheduled)
}

// TestSweepRequests: the sweep costs one query per shard of the share and
// one transaction per session marked, never a read of a session.
func TestSweepRequests(t *testing.T) {
	f, p := apitest.Faulty(t)
	own, scheduled, _ := sweepSetup(t, f)
	before := map[string]int{}
	ops := []string{"Query", "TransactWriteItems", "GetItem", "BatchGetItem", "Scan", "UpdateItem"}
	for _, op := range ops {
		before[op] = p.Count(op)
	}
	at := slotStart.Add(4 * time.Hour)
	if sum, err := fire(t, f, at, at); err != nil || sum != (firing.Summary{TimedOut: 2}) {
		t.Fatalf("%+v %v", sum, err)
	}
	want := map[string]int{"Query": 16 + 16, "TransactWriteItems": 2} // the due and the live shards, the marks
	for _, op := range ops {
		if got := p.Count(op) - before[op]; got != want[op] {
			t.Errorf("%s: %d requests, want %d", op, got, want[op])
		}
	}
	marked(t, f, own, at)
	marked(t, f, scheduled, at)
}

// TestSweepFaults: a storage fault in the sweep (its query, or a mark)
// fails the invocation, logged on its line, and leaves the session for
// the retry, which marks it.
func TestSweepFaults(t *testing.T) {
	for _, r := range []struct {
		rule   string
		inject func(p *faultproxy.Proxy)
	}{
		{"the query", func(p *faultproxy.Proxy) {
			p.Inject("Query", 1, faultproxy.Fault{}) // the due shard's
			p.Inject("Query", 1, faultproxy.DynamoThrottle)
		}},
		{"the mark", func(p *faultproxy.Proxy) { p.Inject("TransactWriteItems", 1, faultproxy.DynamoInternalError) }},
	} {
		t.Run(r.rule, func(t *testing.T) {
			f, p := apitest.Faulty(t, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
			own, _, _ := sweepSetup(t, f)
			detail, _ := json.Marshal(map[string]any{"shards": []int{liveShard(t, f, own)}})
			at := created.Add(180*time.Minute + 2*time.Second) // the scheduled session is not due
			f.Firing.Now = func() time.Time { return at }
			r.inject(p)
			sum, err := f.Firing.Handle(context.Background(), events.EventBridgeEvent{Time: at, Detail: detail})
			if problem.CodeOf(err) != problem.ServiceUnavailable || sum != (firing.Summary{}) || decodeLine(t, f.LastLog()).Error != err.Error() {
				t.Fatalf("%+v %v: %s", sum, err, f.LastLog())
			}
			unmarked(t, f, own)
			if sum, err := f.Firing.Handle(context.Background(), events.EventBridgeEvent{Time: at, Detail: detail}); err != nil || sum != (firing.Summary{TimedOut: 1}) {
				t.Fatalf("the retry: %+v %v", sum, err)
			}
			marked(t, f, own, at)
		})
	}
}
