package firing_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/emftest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/shared/firing"
)

// firingLine is the firing's last log line, checked as EMF, with the
// summary its metrics give and its FiringLag. Every metric of the firing
// is on it, by [Function] alone, Function the firing's.
func firingLine(t *testing.T, h *apitest.Harness) (*emftest.Line, firing.Summary, float64) {
	t.Helper()
	logs := h.Logs()
	line := emftest.Check(t, logs[len(logs)-1])
	want := []string{"ColdStart", "DynamoDBRequests", "Due", "Fired", "Duplicates", "Skipped", "Fallbacks", "Failed", "TimedOut", "FiringLag"}
	if got := line.Metrics(); !slices.Equal(got, want) {
		t.Errorf("metrics %v, want %v", got, want)
	}
	for _, m := range want {
		if sets := line.Sets(m); !slices.Equal(sets, []string{"Function"}) {
			t.Errorf("%s by %v", m, sets)
		}
	}
	if f := line.Members["Function"]; f != apitest.FiringFunction {
		t.Errorf("Function %v", f)
	}
	value := func(name string) int { v, _ := line.Value(name); return int(v) }
	sum := firing.Summary{Due: value("Due"), Fired: value("Fired"), Duplicates: value("Duplicates"),
		Skipped: value("Skipped"), Fallbacks: value("Fallbacks"), Failed: value("Failed"), TimedOut: value("TimedOut")}
	lag, _ := line.Value("FiringLag")
	return line, sum, lag
}

// lagged creates three triggers whose slots as of lagClock differ: a
// missed-slot trigger whose next run (10:01) is the longest due but whose
// slot, the latest, is 10:11 (40 s before the clock; skipped 10); one due
// at 10:05 whose slot is 10:10 (100 s; skipped 1); and one whose slot is
// its next run, 10:07 (280 s), due last. It returns how many slots each
// skips when it fires, by id. Whichever of them fire, the lag is 280 s:
// the third's slot, fired at the clock or left due until it.
func lagged(t *testing.T, h *apitest.Harness) map[string]int {
	return map[string]int{newTrigger(t, h, "* * * * *", nil): 10, newTrigger(t, h, "*/5 * * * *", nil): 1, newTrigger(t, h, "*/7 * * * *", nil): 0}
}

// skippedBy is how many slots the triggers the line notes as fired
// skipped, by lagged's counts.
func skippedBy(t *testing.T, line *emftest.Line, skips map[string]int) (n int) {
	t.Helper()
	notes, _ := line.Members["triggers"].([]any)
	for _, v := range notes {
		note, _ := v.(map[string]any)
		if note["outcome"] == "fired" {
			n += skips[note["trigger"].(string)]
		}
	}
	return n
}

// lagClock is the clock of the lag tests, and their event's time.
var lagClock = time.Date(2026, 11, 30, 10, 11, 40, 0, time.UTC)

// TestFiringMetrics: the firing's line carries its summary as metrics, and
// FiringLag, under a fixed clock exactly the largest time from a trigger's
// slot (the latest, for one that missed slots) to the clock; ColdStart is
// 1 on the firing's first invocation, and an invocation with nothing due
// logs every metric, as zeros.
func TestFiringMetrics(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	lagged(t, h)
	sum, err := fire(t, h, lagClock, lagClock)
	if err != nil || sum != (firing.Summary{Due: 3, Fired: 3, Skipped: 11}) {
		t.Fatalf("%+v %v", sum, err)
	}
	line, metrics, lag := firingLine(t, h)
	if metrics != sum || lag != 280 {
		t.Errorf("metrics %+v, FiringLag %v; want %+v, 280", metrics, lag, sum)
	}
	if v, _ := line.Value("ColdStart"); v != 1 {
		t.Errorf("ColdStart %v on the first invocation", v)
	}
	if v, _ := line.Value("DynamoDBRequests"); v != line.Members["dynamodbRequests"] || v == 0 {
		t.Errorf("DynamoDBRequests %v, dynamodbRequests %v", v, line.Members["dynamodbRequests"])
	}
	if line.Timestamp != lagClock.UnixMilli() {
		t.Errorf("timestamp %d, want the clock's %d", line.Timestamp, lagClock.UnixMilli())
	}
	// Again: nothing is due.
	if sum, err := fire(t, h, lagClock, lagClock); err != nil || sum != (firing.Summary{}) {
		t.Fatalf("again: %+v %v", sum, err)
	}
	line, metrics, lag = firingLine(t, h)
	if v, _ := line.Value("ColdStart"); metrics != (firing.Summary{}) || lag != 0 || v != 0 {
		t.Errorf("again: metrics %+v, FiringLag %v, ColdStart %v", metrics, lag, v)
	}
}

// TestFiringLagLeftDue: a trigger left due by the 10-second reserve counts
// its lag to the end of the invocation: here the one whose slot is the
// oldest, unless it was the one fired.
func TestFiringLagLeftDue(t *testing.T) {
	f, p := apitest.Faulty(t)
	h := setup(t, f)
	skips := lagged(t, h)
	// The reserve begins during the first trigger's transaction.
	ctx := midReserve(t, p)
	fr := *h.Firing
	fr.Concurrency = 1
	fr.Now = func() time.Time { return lagClock }
	sum, err := fr.Handle(ctx, events.EventBridgeEvent{Time: lagClock})
	line, metrics, lag := firingLine(t, h)
	if err != nil || sum != (firing.Summary{Due: 1, Fired: 1, Skipped: skippedBy(t, line, skips)}) {
		t.Fatalf("%+v %v", sum, err)
	}
	if metrics != sum || lag != 280 || line.Members["leftDue"] != float64(2) {
		t.Errorf("metrics %+v, FiringLag %v, leftDue %v", metrics, lag, line.Members["leftDue"])
	}
}

// TestFiringLagFault: a trigger whose slot a fault left due counts its lag
// to the end of the invocation too.
func TestFiringLagFault(t *testing.T) {
	f, p := apitest.Faulty(t, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	h := setup(t, f)
	skips := lagged(t, h)
	p.Inject("TransactWriteItems", 2, faultproxy.Fault{}) // the first two fire
	p.Inject("TransactWriteItems", 1, faultproxy.DynamoInternalError)
	fr := *h.Firing
	fr.Concurrency = 1
	fr.Now = func() time.Time { return lagClock }
	sum, err := fr.Handle(context.Background(), events.EventBridgeEvent{Time: lagClock})
	line, metrics, lag := firingLine(t, h)
	if err == nil || sum != (firing.Summary{Due: 3, Fired: 2, Failed: 1, Skipped: skippedBy(t, line, skips)}) {
		t.Fatalf("%+v %v", sum, err)
	}
	if metrics != sum || lag != 280 || line.Members["level"] != "ERROR" {
		t.Errorf("metrics %+v, FiringLag %v, level %v", metrics, lag, line.Members["level"])
	}
}

// TestEventAheadMetrics: an event more than 5 minutes ahead of the clock
// logs every metric, as zeros.
func TestEventAheadMetrics(t *testing.T) {
	h := setup(t, apitest.New(t, nil))
	newTrigger(t, h, "*/5 * * * *", nil)
	slot := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	if sum, err := fire(t, h, slot, slot.Add(-5*time.Minute-time.Second)); err != nil || sum != (firing.Summary{}) {
		t.Fatalf("%+v %v", sum, err)
	}
	line, metrics, lag := firingLine(t, h)
	if metrics != (firing.Summary{}) || lag != 0 || line.Members["ignored"] == nil {
		t.Errorf("metrics %+v, FiringLag %v: %v", metrics, lag, line.Members)
	}
}
