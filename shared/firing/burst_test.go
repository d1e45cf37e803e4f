package firing_test

import (
	"context"
	"encoding/json/v2"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/problem"
)

// burstSize is how many triggers fall due in the same minute in these
// tests.
const burstSize = 60

// burstSlot is the minute the burst is due.
var burstSlot = time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)

// burst creates burstSize triggers due at burstSlot and returns their ids.
func burst(t *testing.T, h *apitest.Harness) []string {
	t.Helper()
	ids := make([]string, burstSize)
	for i := range ids {
		ids[i] = newTrigger(t, h, "*/5 * * * *", nil)
	}
	return ids
}

// fireAt invokes the firing with the event of burstSlot, concurrency at a
// time.
func fireAt(h *apitest.Harness, concurrency int) (firing.Summary, error) {
	f := *h.Firing
	f.Concurrency = concurrency
	f.Now = func() time.Time { return burstSlot }
	return f.Handle(context.Background(), events.EventBridgeEvent{Source: "aws.events", DetailType: "Scheduled Event", Time: burstSlot})
}

// exactlyOnce checks the table after a burst: every trigger fired its slot
// once, with one session under the slot's operation key and one ledger row,
// recorded on the trigger and in its run history; no other session or run
// exists.
func exactlyOnce(t *testing.T, h *apitest.Harness, ids []string) {
	t.Helper()
	items := h.Items()
	all := strings.Join(items, "\n")
	slot := burstSlot.Format(time.RFC3339)
	recorded := map[string]bool{}
	for _, id := range ids {
		tr := read(t, h, id)
		sid, _ := tr["lastSessionId"].(string)
		if tr["lastRunAt"] != slot || tr["lastRunStatus"] != "fired" || sid == "" || tr["nextRunAt"] != "2026-11-30T10:10:00Z" {
			t.Errorf("%s: %v", id, tr)
			continue
		}
		if recorded[sid] {
			t.Errorf("%s records the session of another trigger: %s", id, sid)
		}
		recorded[sid] = true
		row := fmt.Sprintf(`"PK":{"S":"OPERATION#u1#trigger:%s:%s"}`, id, slot)
		if strings.Count(all, row) != 1 || !strings.Contains(all, `"sessionId":{"S":"`+sid+`"}`) {
			t.Errorf("%s: no ledger row of its slot naming %s", id, sid)
		}
		pk, sk := fmt.Sprintf(`"PK":{"S":"TRIGGER#%s"}`, id), fmt.Sprintf(`"SK":{"S":"RUN#%s.000Z"}`, strings.TrimSuffix(slot, "Z"))
		runs := 0
		for _, it := range items {
			if strings.Contains(it, pk) && strings.Contains(it, sk) {
				runs++
				if !strings.Contains(it, `"sessionId":{"S":"`+sid+`"}`) || !strings.Contains(it, `"status":{"S":"fired"}`) {
					t.Errorf("%s: its run is %s", id, it)
				}
			}
		}
		if runs != 1 {
			t.Errorf("%s: %d runs of its slot", id, runs)
		}
	}
	if n := len(h.Sessions()); n != len(ids) {
		t.Errorf("%d sessions for %d slots", n, len(ids))
	}
	if n := strings.Count(all, `"SK":{"S":"RUN#`); n != len(ids) {
		t.Errorf("%d runs for %d slots", n, len(ids))
	}
}

// TestBurstOverlapping: a burst fired by two invocations at once (a late
// retry overlapping the next delivery, say) starts one session per slot;
// each slot counts fired in exactly one of them.
func TestBurstOverlapping(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	ids := burst(t, h)
	var wg sync.WaitGroup
	sums := make([]firing.Summary, 2)
	for i := range sums {
		wg.Go(func() {
			var err error
			if sums[i], err = fireAt(h, 8); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := sums[0].Fired + sums[1].Fired; got != burstSize || sums[0].Failed+sums[1].Failed != 0 {
		t.Errorf("fired %d of %d: %+v", got, burstSize, sums)
	}
	exactlyOnce(t, h, ids)
}

// TestBurstGrouped: a burst's new sessions go out several to a
// transaction (store.Table.Grouped), and slots whose ledger rows exist
// already, mixed among them, are duplicates that cancel only their own
// writes: every slot fires once, with one session each.
func TestBurstGrouped(t *testing.T) {
	f, p := apitest.Faulty(t)
	h := setup(t, f)
	earlier := make([]string, burstSize/3)
	for i := range earlier {
		earlier[i] = newTrigger(t, h, "*/5 * * * *", nil)
	}
	if sum, err := fireAt(h, 32); err != nil || sum.Fired != len(earlier) {
		t.Fatalf("%+v %v", sum, err)
	}
	for _, id := range earlier {
		rewind(t, h, id, burstSlot) // their slots' rows and sessions stand
	}
	ids := earlier
	for len(ids) < burstSize {
		ids = append(ids, newTrigger(t, h, "*/5 * * * *", nil))
	}
	before, all := p.Count("TransactWriteItems"), p.Count("")
	sum, err := fireAt(h, 32)
	if want := (firing.Summary{Due: burstSize, Fired: burstSize - len(earlier), Duplicates: len(earlier)}); err != nil || sum != want {
		t.Fatalf("%+v %v, want %+v", sum, err, want)
	}
	// One transaction records each duplicate's run; the new sessions'
	// transactions are fewer than the slots they start.
	if n := p.Count("TransactWriteItems") - before - len(earlier); n >= burstSize {
		t.Errorf("%d transactions for %d slots", n, burstSize)
	}
	// The log line counts each grouped transaction once, as sent.
	var line struct {
		DynamodbRequests int `json:"dynamodbRequests"`
	}
	if err := json.Unmarshal([]byte(h.LastLog()), &line); err != nil || line.DynamodbRequests != p.Count("")-all {
		t.Errorf("the log line counts %d requests, the proxy saw %d (%v)", line.DynamodbRequests, p.Count("")-all, err)
	}
	exactlyOnce(t, h, ids)
}

// TestBurstTwice: the same event delivered again after the burst fired
// starts nothing.
func TestBurstTwice(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	ids := burst(t, h)
	if sum, err := fireAt(h, 32); err != nil || sum != (firing.Summary{Due: burstSize, Fired: burstSize}) {
		t.Fatalf("%+v %v", sum, err)
	}
	if sum, err := fireAt(h, 32); err != nil || sum != (firing.Summary{}) {
		t.Errorf("again: %+v %v", sum, err)
	}
	exactlyOnce(t, h, ids)
}

// TestBurstFaults: throttling, server errors and lost answers on a share
// of the requests, mid-burst, with no retry by the SDK (each one fails its
// call): the invocation fails, the slots it could not fire stay due, and
// the retries fire each of them once.
func TestBurstFaults(t *testing.T) {
	// Only the faults fail a call: no retry, and time enough for each
	// attempt however busy the machine.
	f, p := apitest.Faulty(t, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	h := setup(t, f)
	ids := burst(t, h)
	p.InjectEvery("TransactWriteItems", 5, faultproxy.DynamoThrottle)
	p.InjectEvery("TransactWriteItems", 7, faultproxy.DynamoInternalError)
	p.InjectEvery("TransactWriteItems", 11, faultproxy.DropAfter) // written, the answer lost
	p.InjectEvery("GetItem", 3, faultproxy.DynamoInternalError)
	first, err := fireAt(h, 32)
	if err == nil || first.Failed == 0 || first.Due != burstSize {
		t.Fatalf("the faulty invocation: %+v %v", first, err)
	}
	p.ClearEvery()
	// What the summary says failed is what stayed due, but for the writes
	// whose answers were lost.
	due := 0
	for _, id := range ids {
		if read(t, h, id)["nextRunAt"] == "2026-11-30T10:05:00Z" {
			due++
		}
	}
	if due == 0 || due > first.Failed || first.Fired != burstSize-first.Failed {
		t.Errorf("%d left due after %+v", due, first)
	}
	if n := len(h.Sessions()); n != burstSize-due {
		t.Errorf("%d sessions for %d slots fired", n, burstSize-due)
	}
	retry, err := fireAt(h, 32)
	if err != nil || retry != (firing.Summary{Due: due, Fired: due}) {
		t.Errorf("the retry: %+v %v, %d were due", retry, err, due)
	}
	exactlyOnce(t, h, ids)
}

// TestBurstLogLine: under concurrency the summary is exact and the one
// log line carries it, with a note per trigger (60, under the bound of
// 100, so that nothing is counted apart), and as metrics, with FiringLag
// 0: every slot is the clock's minute.
func TestBurstLogLine(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	ids := burst(t, h)
	sum, err := fireAt(h, 32)
	if err != nil || sum != (firing.Summary{Due: burstSize, Fired: burstSize}) {
		t.Fatalf("%+v %v", sum, err)
	}
	logs := h.Logs()
	line := decodeLine(t, logs[len(logs)-1])
	noted := map[string]bool{}
	for _, n := range line.Triggers {
		noted[n.Trigger] = n.Outcome == "fired"
	}
	if line.Summary != sum || len(line.Triggers) != burstSize || len(noted) != burstSize || line.MoreTriggers != nil || line.MoreFaults != nil {
		t.Errorf("%+v, %d notes, %v more", line.Summary, len(line.Triggers), line.MoreTriggers)
	}
	for _, id := range ids {
		if !noted[id] {
			t.Errorf("%s is not noted as fired", id)
		}
	}
	if _, metrics, lag := firingLine(t, h); metrics != sum || lag != 0 {
		t.Errorf("metrics %+v, FiringLag %v", metrics, lag)
	}
}

// firingLog is the firing's log line, in part.
type firingLog struct {
	Summary  firing.Summary `json:"summary"`
	Triggers []struct {
		Trigger string `json:"trigger"`
		Outcome string `json:"outcome"`
		Code    string `json:"code"`
	} `json:"triggers"`
	MoreTriggers *int   `json:"moreTriggers"`
	MoreFaults   *int   `json:"moreFaults"`
	Error        string `json:"error"`
}

// decodeLine decodes the firing's log line raw.
func decodeLine(t *testing.T, raw string) firingLog {
	t.Helper()
	var line firingLog
	if err := json.Unmarshal([]byte(raw), &line); err != nil {
		t.Fatal(err)
	}
	return line
}

// maxFiringLine is the budget of the firing's log line, in bytes: a
// quarter of CloudWatch Logs' limit of 256 KB per event, past which the
// line and the metrics it carries are lost.
const maxFiringLine = 64 << 10

// TestBurstFaultLine: a storage outage in a burst of 500 due triggers (of
// five owners) fails every one of them, each with an SDK message of over
// 2,000 characters, and the one log line stays under its budget and keeps
// its metrics: it names 100 triggers and counts the
// other 400 in moreTriggers, and its error names 20 faults, each cut to
// 500 characters, and counts the other 480, in moreFaults too. The error
// returned to Lambda is the line's.
func TestBurstFaultLine(t *testing.T) {
	const size = 500
	f, p := apitest.Faulty(t, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	h := setup(t, f)
	for i := range size {
		h.CreateTrigger(t, map[string]string{"sub": fmt.Sprintf("u%d", i/100)}, everyMinute)
	}
	p.InjectEvery("TransactWriteItems", 1, faultproxy.Status(500, "InternalServerError", strings.Repeat("the storage is down; ", 100)))
	sum, err := fireAt(h, 32)
	if err == nil || sum != (firing.Summary{Due: size, Failed: size}) || problem.CodeOf(err) != problem.ServiceUnavailable {
		t.Fatalf("%+v %v", sum, err)
	}
	logs := h.Logs()
	raw := logs[len(logs)-1]
	t.Logf("the line: %d bytes", len(raw))
	if len(raw) > maxFiringLine {
		t.Errorf("the line is %d bytes, over %d", len(raw), maxFiringLine)
	}
	if _, metrics, _ := firingLine(t, h); metrics != sum {
		t.Errorf("metrics %+v", metrics)
	}
	line := decodeLine(t, raw)
	if len(line.Triggers) != 100 || line.MoreTriggers == nil || *line.MoreTriggers != 400 {
		t.Errorf("%d notes, %v more", len(line.Triggers), line.MoreTriggers)
	}
	for _, n := range line.Triggers {
		if n.Outcome != "failed" || n.Code != "service_unavailable" {
			t.Errorf("note %+v", n)
		}
	}
	faults := strings.Split(line.Error, "\n")
	if len(faults) != 21 || faults[20] != "and 480 more faults" || line.MoreFaults == nil || *line.MoreFaults != 480 {
		t.Fatalf("%d lines of faults, ending %q; %v more", len(faults), faults[len(faults)-1], line.MoreFaults)
	}
	for _, fault := range faults[:20] {
		if n := utf8.RuneCountInString(fault); n != 501 || !strings.HasPrefix(fault, "service_unavailable") || !strings.HasSuffix(fault, "…") {
			t.Errorf("a fault of %d characters: %q", n, fault)
		}
	}
	if err.Error() != line.Error {
		t.Errorf("the error returned is not the line's: %.200q", err.Error())
	}
}
