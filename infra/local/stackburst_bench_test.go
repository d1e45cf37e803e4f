package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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

// everyMinuteBody is a trigger due every minute.
const everyMinuteBody = `{"schedule":{"cron":"* * * * *"},"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"prompt":"Triage new issues."}`

// stackBurst is a local stack as `make run` runs it (the embedded
// endpoint in the stack's process), whose functions reach the endpoint
// through a fault proxy in a process of its own: what a test from outside
// sets up with AWS_ENDPOINT_URL_DYNAMODB naming a delaying proxy.
type stackBurst struct {
	stack *Stack
	proxy *faultproxy.Process
	size  int    // the triggers created
	logs  string // the file of the stack's log lines
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
	logs, err := os.Create(filepath.Join(b.TempDir(), "stack.log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = logs.Close() })
	s, err := Start(context.Background(), Config{Repo: "../..", APIAddr: "127.0.0.1:0", DynamoURL: proxy.URL(), SettingsFile: filepath.Join(b.TempDir(), "settings.json"), Logs: logs, Verbose: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	return &stackBurst{stack: s, proxy: proxy, logs: logs.Name()}
}

// logged is what the stack's and its functions' log lines say of a
// request, by its id.
func (sb *stackBurst) logged(id any) string {
	var lines []string
	out, _ := os.ReadFile(sb.logs)
	for l := range strings.Lines(string(out)) {
		if strings.Contains(l, fmt.Sprint(id)) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "")
}

// ownerToken is the token of the i-th trigger's owner: 100 triggers an
// owner, the limit.
func ownerToken(i int) string {
	return gateway.DevToken(map[string]any{"sub": fmt.Sprintf("burst-u%d", i/100)})
}

// grow creates size triggers of `* * * * *` through the stack's API.
func (sb *stackBurst) grow(b *testing.B, size int) {
	for ; sb.size < size; sb.size++ {
		if status, body := call(b, "POST", sb.stack.APIURL+"/v1/triggers", ownerToken(sb.size), everyMinuteBody); status != 201 {
			b.Fatalf("creating trigger %d: %d %v", sb.size, status, body)
		}
	}
}

// schedule runs the firing's schedule through the stack's API as of at,
// and returns its summary.
func (sb *stackBurst) schedule(b *testing.B, at time.Time) map[string]any {
	status, sum := call(b, "POST", sb.stack.APIURL+"/_local/schedule/TriggerFireFunction", "", `{"time":"`+at.Format(time.RFC3339)+`"}`)
	if status != 200 {
		b.Fatalf("the schedule: %d %v", status, sum)
	}
	return sum
}

// burstStart is the most of a minute that the start of a stack and the
// creation of its triggers may take: a burst's stack starts within
// burstStart of a minute's start, so that the stack's own schedule, which
// invokes the firing at each minute's start, has not yet run when the
// burst is fired, for the next minute.
const burstStart = 45 * time.Second

// freshMinute waits for the next minute to begin, unless at least
// burstStart is left of this one.
func freshMinute() {
	if next := time.Now().Truncate(time.Minute).Add(time.Minute); time.Until(next) < burstStart {
		time.Sleep(time.Until(next) + 100*time.Millisecond)
	}
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
// its gateway and the embedded endpoint), the firing's bootstrap (none
// before its first invocation) and its emulator, and the proxy's process.
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
	c := cpu{stack: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), emulator: processCPU(b, emulator), proxy: proxy}
	if bootstrap != "" {
		c.firing = processCPU(b, bootstrap)
	}
	return c
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

// fire fires every trigger for the minute slot through the stack's API
// with the proxy at burstLatency, checks the summary and that each
// trigger fired once for that slot, and returns the burst's time, from
// the request to its answer (the gateway answers once the invocation
// has returned, every run recorded), and what each process spent on it.
func (sb *stackBurst) fire(b *testing.B, slot time.Time) (burst, cpu) {
	b.StopTimer()
	sb.setLatency(b, burstLatency)
	before := sb.measure(b)
	logged := sb.logSize(b)
	b.StartTimer()
	begun := time.Now()
	sum := sb.schedule(b, slot)
	took := burst{took: time.Since(begun)}
	b.StopTimer()
	spent := sb.measure(b).since(before)
	took.init, took.handler = sb.invocation(b, logged)
	sb.setLatency(b, 0)
	want := map[string]any{"due": float64(sb.size), "fired": float64(sb.size), "duplicates": 0.0, "skipped": 0.0, "fallbacks": 0.0, "failed": 0.0, "timedOut": 0.0}
	if fmt.Sprint(sum) != fmt.Sprint(want) {
		b.Fatalf("the firing's summary: %v, want %v", sum, want)
	}
	sb.firedOnce(b, slot)
	b.StartTimer()
	return took, spent
}

// burst is what a burst took: the POST's time, the part of it the
// emulator reports as the bootstrap's initialisation (0 when it was
// running), and the firing's own (its log line's latencyMs, from its
// handler's start to its end).
type burst struct{ took, init, handler time.Duration }

func (t burst) add(o burst) burst {
	return burst{t.took + o.took, t.init + o.init, t.handler + o.handler}
}

// logSize is the size of the stack's log so far.
func (sb *stackBurst) logSize(b *testing.B) int64 {
	fi, err := os.Stat(sb.logs)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// The emulator's report of a bootstrap's initialisation, and the firing's
// log line, in the stack's log.
var (
	initReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)
	fireLine   = regexp.MustCompile(`"msg":"fire".*"latencyMs":([0-9]+)`)
)

// invocation reads, from the stack's log past offset from, the
// initialisation the emulator reported for the invocation of the firing
// (none: 0) and the firing's latency.
func (sb *stackBurst) invocation(b *testing.B, from int64) (init, handler time.Duration) {
	out, err := os.ReadFile(sb.logs)
	if err != nil {
		b.Fatal(err)
	}
	logged := string(out[from:])
	if m := initReport.FindStringSubmatch(logged); m != nil {
		ms, _ := strconv.ParseFloat(m[1], 64)
		init = time.Duration(ms * float64(time.Millisecond))
	}
	m := fireLine.FindStringSubmatch(logged)
	if m == nil {
		b.Fatalf("no line of the firing in the stack's log:\n%s", logged)
	}
	ms, _ := strconv.Atoi(m[1])
	return init, time.Duration(ms) * time.Millisecond
}

// firedOnce checks, through each owner's list of triggers, that every
// trigger fired the slot, each with a session of its own.
func (sb *stackBurst) firedOnce(b *testing.B, slot time.Time) {
	sessions := map[any]bool{}
	for i := 0; i < sb.size; i += 100 {
		status, list := call(b, "GET", sb.stack.APIURL+"/v1/triggers?limit=100", ownerToken(i), "")
		items, _ := list["items"].([]any)
		if status != 200 || len(items) != min(100, sb.size-i) {
			b.Fatalf("the triggers of owner %d: %d %v\n%s", i/100, status, list, sb.logged(list["requestId"]))
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

// BenchmarkStackBurst: size triggers due in one minute, fired by
// `POST /_local/schedule/TriggerFireFunction` with that minute's time,
// as a test from outside runs it against `make run`: a stack of its own
// for each size, started as `make run` starts it (the gateway, the
// runtime emulator, the built bootstraps), its embedded endpoint in the
// stack's process, which collects as `make run`'s (TuneGC), every
// DynamoDB request of the functions through the fault proxy, in a
// process of its own. The triggers are created through the API, 100 per
// owner (the limit), with no latency; then, at 5 ms a request, the burst
// is the firing's first invocation (its bootstrap's cold start under the
// emulator included: the stack starts at the start of a minute and
// fires the next one's burst before its own schedule first invokes the
// firing), and the warm burst the next minute's, fired at once after
// it. Each burst must fire every trigger once. The time is the POST's,
// to its answer: the gateway answers once the invocation has returned,
// every run recorded. Metrics: the burst's seconds and their ratio to
// size × 5 ms (x-delay; the goal, in infra/cmd/benchtable, is at most 0.10), of which the bootstrap's
// initialisation as the emulator reports it (init-ms) and the firing's
// handler (handler-ms, its log line's latencyMs); the same for the warm
// burst (no initialisation); the CPU this process (the stack: the gateway and the endpoint),
// the firing's bootstrap, its emulator and the proxy's process spend on
// the first burst. Run it with -benchtime=1x.
func BenchmarkStackBurst(b *testing.B) {
	for _, size := range []int{300, 2000} {
		b.Run(fmt.Sprintf("triggers=%d", size), func(b *testing.B) {
			var cold, warm burst
			var spent cpu
			for range b.N {
				b.StopTimer()
				freshMinute()
				sb := newStackBurst(b)
				sb.grow(b, size)
				slot := time.Now().Truncate(time.Minute).Add(time.Minute)
				if _, bootstrap := functionProcesses(b, sb.stack, "TriggerFireFunction"); bootstrap != "" || time.Until(slot) < time.Second {
					b.Fatalf("the stack's start and its %d triggers took until %s, past the minute", size, time.Now().Format(time.RFC3339Nano))
				}
				t, c := sb.fire(b, slot)
				if t.init == 0 {
					b.Fatal("the emulator reported no initialisation for the firing's first invocation: the cold burst was not cold, or its INIT REPORT line was not logged")
				}
				cold = cold.add(t)
				spent = spent.add(c)
				t, _ = sb.fire(b, slot.Add(time.Minute))
				warm = warm.add(t)
			}
			n := float64(b.N)
			delay := float64(size) * burstLatency.Seconds()
			b.ReportMetric(cold.took.Seconds()/n, "s/burst")
			b.ReportMetric(cold.took.Seconds()/n/delay, "x-delay")
			b.ReportMetric(cold.init.Seconds()*1000/n, "init-ms")
			b.ReportMetric(cold.handler.Seconds()*1000/n, "handler-ms")
			b.ReportMetric(warm.took.Seconds()/n, "warm-s/burst")
			b.ReportMetric(warm.took.Seconds()/n/delay, "warm-x-delay")
			b.ReportMetric(warm.handler.Seconds()*1000/n, "warm-handler-ms")
			b.ReportMetric(spent.stack.Seconds()/n, "stack-cpu-s")
			b.ReportMetric(spent.firing.Seconds()/n, "firing-cpu-s")
			b.ReportMetric(spent.emulator.Seconds()/n, "emulator-cpu-s")
			b.ReportMetric(spent.proxy.Seconds()/n, "proxy-cpu-s")
		})
	}
}
