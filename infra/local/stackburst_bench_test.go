package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
	"github.com/cloud-agent/control-plane/infra/local/dynamo"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/infra/local/gateway"
)

// TestMain serves BenchmarkStackBurst's fault proxy in the process that
// faultproxy.Separate starts.
func TestMain(m *testing.M) {
	faultproxy.Serve()
	os.Exit(m.Run())
}

// burstLatency stands in for the network between Lambda and DynamoDB: the
// fault proxy adds it to every request of a burst.
const burstLatency = 5 * time.Millisecond

// burstShare is the goal: a burst of N triggers within burstShare × N ×
// burstLatency.
const burstShare = 0.10

// everyMinuteBody is a trigger due every minute.
const everyMinuteBody = `{"schedule":{"cron":"* * * * *"},"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"prompt":"Triage new issues."}`

// stackBurst is a local stack as `make run` runs it (the embedded
// endpoint in the stack's process), whose functions reach the endpoint
// through a fault proxy in a process of its own.
type stackBurst struct {
	stack *Stack
	proxy *faultproxy.Process
	size  int       // the triggers created so far
	last  time.Time // the minute last fired
}

// newStackBurst starts the embedded endpoint in this process, as the
// stack serves it (this process collecting as `make run`'s does), the
// proxy to it, and the stack on the proxy, which creates the table there.
func newStackBurst(b *testing.B) *stackBurst {
	TuneGC()
	ep, err := dynamo.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ep.Close(context.Background()) })
	proxy := faultproxy.Separate(b, ep.URL)
	return &stackBurst{stack: startStack(b, Config{DynamoURL: proxy.URL()}), proxy: proxy}
}

// ownerToken is the token of the i-th trigger's owner: 100 triggers an
// owner, the limit.
func ownerToken(i int) string {
	return gateway.DevToken(map[string]any{"sub": fmt.Sprintf("burst-u%d", i/100)})
}

// grow creates triggers of `* * * * *` through the stack's API until there
// are size of them.
func (sb *stackBurst) grow(b *testing.B, size int) {
	for ; sb.size < size; sb.size++ {
		if status, body := call(b, "POST", sb.stack.APIURL+"/v1/triggers", ownerToken(sb.size), everyMinuteBody); status != 201 {
			b.Fatalf("creating trigger %d: %d %v", sb.size, status, body)
		}
	}
}

// schedule runs the firing's schedule through the stack's API, as of at
// (now when zero), and returns its summary.
func (sb *stackBurst) schedule(b *testing.B, at time.Time) map[string]any {
	body := ""
	if !at.IsZero() {
		body = `{"time":"` + at.Format(time.RFC3339) + `"}`
	}
	status, sum := call(b, "POST", sb.stack.APIURL+"/_local/schedule/TriggerFireFunction", "", body)
	if status != 200 {
		b.Fatalf("the schedule: %d %v", status, sum)
	}
	return sum
}

// burstMargin is the least time left in the minute for a burst to be
// fired for the next one, before the stack's own schedule fires it.
const burstMargin = 15 * time.Second

// due waits until every trigger is due at the next minute with time to
// fire them before it, and returns that minute. The stack's schedule
// fires each minute's due triggers at its start; an invocation of the
// firing as of now, once the clock has reached the minute last fired
// (whose triggers are due at the one after), leaves every trigger due at
// the next minute.
func (sb *stackBurst) due(b *testing.B) time.Time {
	next := func() time.Time { return time.Now().Truncate(time.Minute).Add(time.Minute) }
	if time.Now().Before(sb.last) || time.Until(next()) < burstMargin {
		time.Sleep(time.Until(next().Add(time.Second)))
	}
	sb.schedule(b, time.Time{}) // after the stack's own, or in its place
	if time.Until(next()) < burstMargin/2 {
		b.Fatalf("the stack's schedule took until %s", time.Now().Format(time.RFC3339Nano))
	}
	sb.last = next()
	return sb.last
}

// cpu is what the processes of a burst spend, so far or over it.
type cpu struct{ stack, firing, emulator, proxy time.Duration }

func (c cpu) since(before cpu) cpu {
	return cpu{c.stack - before.stack, c.firing - before.firing, c.emulator - before.emulator, c.proxy - before.proxy}
}

func (c cpu) add(o cpu) cpu {
	return cpu{c.stack + o.stack, c.firing + o.firing, c.emulator + o.emulator, c.proxy + o.proxy}
}

// measure reads the CPU time spent so far by this process (the stack:
// its gateway and the embedded endpoint), the firing's bootstrap and its
// emulator, and the proxy's process.
func (sb *stackBurst) measure(b *testing.B) cpu {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	emulator, bootstrap := functionProcesses(b, sb.stack, "TriggerFireFunction")
	proxy, err := sb.proxy.CPU()
	if err != nil {
		b.Fatal(err)
	}
	return cpu{stack: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), firing: processCPU(b, bootstrap), emulator: processCPU(b, emulator), proxy: proxy}
}

// processCPU is the CPU time the process pid has spent so far.
func processCPU(b *testing.B, pid string) time.Duration {
	n, err := strconv.Atoi(pid)
	if err != nil {
		b.Fatalf("no process %q", pid)
	}
	p, err := os.FindProcess(n)
	if err != nil {
		b.Fatal(err)
	}
	d, err := childproc.CPU(&exec.Cmd{Process: p})
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// fire fires every trigger, due at the next minute, through the stack's
// API with the proxy at burstLatency, checks the summary and that each
// trigger fired once for that minute, and returns the burst's time and
// what each process spent on it.
func (sb *stackBurst) fire(b *testing.B) (time.Duration, cpu) {
	b.StopTimer()
	slot := sb.due(b)
	sb.setLatency(b, burstLatency)
	before := sb.measure(b)
	b.StartTimer()
	begun := time.Now()
	sum := sb.schedule(b, slot)
	took := time.Since(begun)
	b.StopTimer()
	spent := sb.measure(b).since(before)
	sb.setLatency(b, 0)
	want := map[string]any{"due": float64(sb.size), "fired": float64(sb.size), "duplicates": 0.0, "skipped": 0.0, "fallbacks": 0.0, "failed": 0.0}
	if fmt.Sprint(sum) != fmt.Sprint(want) {
		b.Fatalf("the firing's summary: %v, want %v", sum, want)
	}
	sb.firedOnce(b, slot)
	b.StartTimer()
	return took, spent
}

// firedOnce checks, through each owner's list of triggers, that every
// trigger fired the slot, each with a session of its own.
func (sb *stackBurst) firedOnce(b *testing.B, slot time.Time) {
	sessions := map[any]bool{}
	for i := 0; i < sb.size; i += 100 {
		status, list := call(b, "GET", sb.stack.APIURL+"/v1/triggers?limit=100", ownerToken(i), "")
		items, _ := list["items"].([]any)
		if status != 200 || len(items) != min(100, sb.size-i) {
			b.Fatalf("the triggers of owner %d: %d, %d items", i/100, status, len(items))
		}
		for _, it := range items {
			tr := it.(map[string]any)
			if tr["lastRunAt"] != slot.Format(time.RFC3339) || tr["lastRunStatus"] != "fired" || tr["lastSessionId"] == nil {
				b.Fatalf("trigger %v: last run %v %v, session %v; want %s fired", tr["triggerId"], tr["lastRunAt"], tr["lastRunStatus"], tr["lastSessionId"], slot.Format(time.RFC3339))
			}
			sessions[tr["lastSessionId"]] = true
		}
	}
	if len(sessions) != sb.size {
		b.Fatalf("%d sessions for %d triggers", len(sessions), sb.size)
	}
}

func (sb *stackBurst) setLatency(b *testing.B, d time.Duration) {
	if err := sb.proxy.SetLatency(d); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkStackBurst: size triggers due in one minute, fired by one
// invocation of the firing through the local stack as `make run` runs it
// (`POST /_local/schedule/TriggerFireFunction`, the gateway, the runtime
// emulator, the built bootstrap), its embedded endpoint in the stack's
// process, which collects as `make run`'s (TuneGC), every DynamoDB
// request of the functions through the fault proxy, in a process of its
// own, at 5 ms. The triggers are created through the API (100 per owner)
// with no latency: 300, then 2,000 on the same stack, one burst each
// (-benchtime=1x). Each burst must fire every trigger once. Metrics: the
// burst's seconds, the goal's bound (0.10 × size × 5 ms) and the time
// over it; the CPU this process (the stack: the gateway and the
// endpoint), the firing's bootstrap, its emulator and the proxy's process
// spend on the burst.
func BenchmarkStackBurst(b *testing.B) {
	sb := newStackBurst(b)
	for _, size := range []int{300, 2000} {
		b.Run(fmt.Sprintf("triggers=%d", size), func(b *testing.B) {
			b.StopTimer()
			sb.grow(b, size)
			b.StartTimer()
			var took time.Duration
			var spent cpu
			for range b.N {
				t, c := sb.fire(b)
				took += t
				spent = spent.add(c)
			}
			n := float64(b.N)
			burst, bound := took.Seconds()/n, burstShare*float64(size)*burstLatency.Seconds()
			b.ReportMetric(burst, "s/burst")
			b.ReportMetric(bound, "bound-s")
			b.ReportMetric(burst/bound, "x-bound")
			b.ReportMetric(spent.stack.Seconds()/n, "stack-cpu-s")
			b.ReportMetric(spent.firing.Seconds()/n, "firing-cpu-s")
			b.ReportMetric(spent.emulator.Seconds()/n, "emulator-cpu-s")
			b.ReportMetric(spent.proxy.Seconds()/n, "proxy-cpu-s")
		})
	}
}
