package scaling

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite docs/scaling.md's table of the model from docs/performance.md's run")

// burst is one BenchmarkBurst row of docs/performance.md: its size, its
// concurrency, its time, the cores, and the CPU each side spent.
type burst struct {
	size, concurrency, cores int
	wall                     time.Duration
	firingCPU, endpointCPU   float64 // CPU-seconds
	proxyCPU                 float64
}

var (
	burstWall = regexp.MustCompile("(?m)^\\| `BenchmarkBurst/triggers=(\\d+)/concurrency=(\\d+)` \\| [0-9.]+× its floor \\(([0-9.]+) s over ")
	burstCPU  = regexp.MustCompile("(?m)^\\| `BenchmarkBurst/triggers=(\\d+)/concurrency=(\\d+)` \\| the firing's side alone: [0-9.]+× its floor \\(([0-9.]+) CPU-s over (\\d+) cores: [0-9.]+ s; the endpoint's process: ([0-9.]+) CPU-s; the proxy's: ([0-9.]+) CPU-s\\)")
)

// measuredBursts reads the bursts of docs/performance.md's run.
func measuredBursts(t *testing.T) map[string]*burst {
	t.Helper()
	page, err := os.ReadFile("../../docs/performance.md")
	if err != nil {
		t.Fatal(err)
	}
	bursts := map[string]*burst{}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, m := range burstWall.FindAllStringSubmatch(string(page), -1) {
		bursts[m[1]+"/"+m[2]] = &burst{size: int(num(m[1])), concurrency: int(num(m[2])), wall: time.Duration(num(m[3]) * float64(time.Second))}
	}
	for _, m := range burstCPU.FindAllStringSubmatch(string(page), -1) {
		b := bursts[m[1]+"/"+m[2]]
		if b == nil {
			t.Fatalf("docs/performance.md: the CPU of a burst without its time: %s", m[0])
		}
		b.firingCPU, b.cores, b.endpointCPU, b.proxyCPU = num(m[3]), int(num(m[4])), num(m[5]), num(m[6])
	}
	for _, key := range []string{"2000/32", "10000/32"} {
		if b := bursts[key]; b == nil || b.cores == 0 {
			t.Fatalf("docs/performance.md has no burst of %s triggers at concurrency %s with its CPU", strings.Split(key, "/")[0], strings.Split(key, "/")[1])
		}
	}
	return bursts
}

// local is the model of a burst as BenchmarkBurst runs it: one
// invocation, the firing's side, the endpoint and the fault proxy on the
// machine's cores, 5 ms a request, no DynamoDB limit.
func (b *burst) local() Config {
	perTrigger := (b.firingCPU + b.endpointCPU + b.proxyCPU) / float64(b.size)
	return Config{Invocations: 1, Concurrency: b.concurrency, Cores: float64(b.cores),
		CPU: time.Duration(perTrigger * float64(time.Second)), Latency: 5 * time.Millisecond}
}

// TestModelAgainstBursts: the model, given what a measured burst spent
// per trigger, gives its time within 25 %, for the bursts of 2,000 and
// 10,000 of docs/performance.md's run.
func TestModelAgainstBursts(t *testing.T) {
	for key, b := range measuredBursts(t) {
		if b.concurrency != 32 {
			continue
		}
		model := b.local().Fire(b.size).Wall
		r := model.Seconds() / b.wall.Seconds()
		t.Logf("burst %s: the model says %s, measured %s (%.2f×)", key, model, b.wall, r)
		if r < 0.75 || r > 1.25 {
			t.Errorf("burst %s: the model says %s, measured %s (%.2f×)", key, model, b.wall, r)
		}
	}
}

// TestModel: the model's bounds each bind where they should.
func TestModel(t *testing.T) {
	// 256 in flight go out as 32 transactions of 8: enough to keep the
	// cores busy.
	c := Config{Invocations: 1, Concurrency: 256, Cores: 1, CPU: time.Millisecond, Latency: 10 * time.Millisecond}
	for _, r := range []struct {
		rule    string
		c       Config
		binding string
		rate    float64 // triggers per second, within 2 %
	}{
		{"one at a time: latency and CPU in turn", with(c, func(c *Config) { c.Concurrency = 1 }), invocations, 1 / 0.011},
		{"one transaction of 8: its latency, then their CPU", with(c, func(c *Config) { c.Concurrency = 8 }), invocations, 8 / 0.018},
		{"many in flight: the CPU", c, invocations, 1000},
		{"two cores: twice", with(c, func(c *Config) { c.Cores = 2 }), invocations, 2000},
		{"half a core: half", with(c, func(c *Config) { c.Cores = 0.5 }), invocations, 500},
		{"K invocations: K times", with(c, func(c *Config) { c.Invocations = 4 }), invocations, 4000},
		{"the table's quota", with(c, func(c *Config) { c.Invocations = 16; c.TableWrites = 40000 }), table, 5000},
		{"the due index's partitions", with(c, func(c *Config) { c.Invocations = 16; c.Shards = 16 }), dueIndex, 8000},
	} {
		m := r.c.Fire(100000)
		got := 100000 / (m.Wall - r.c.Latency).Seconds()
		if m.Binding.Name != r.binding || got < r.rate*0.98 || got > r.rate*1.02 {
			t.Errorf("%s: bound by %s at %.0f a second, want %s at %.0f", r.rule, m.Binding.Name, got, r.binding, r.rate)
		}
	}
	if _, ok := Needs(100_000_000, time.Millisecond); ok {
		t.Error("a burst no lever holds fits")
	}
	if d, ok := Needs(1000, time.Millisecond); !ok || d != Template {
		t.Errorf("a small burst needs %+v, not the template's", d)
	}
}

const (
	invocations = "the invocations' CPU and latency"
	table       = "the table's write units"
	dueIndex    = "the due index's partitions"
)

func with(c Config, f func(*Config)) Config { f(&c); return c }

const (
	tableBegins = "<!-- the model's table: go test ./infra/scaling -update -->\n"
	tableEnds   = "<!-- end of the model's table -->\n"
)

// TestScalingPage: docs/scaling.md's table is the model's, at the CPU per
// trigger the firing's side spent in the burst of 10,000 of
// docs/performance.md's run (-update rewrites it).
func TestScalingPage(t *testing.T) {
	b := measuredBursts(t)["10000/32"]
	cpu := time.Duration(b.firingCPU / float64(b.size) * float64(time.Second)).Round(time.Microsecond)
	want := fmt.Sprintf("At %.3f ms of CPU per fired trigger (the firing's side in the burst of 10,000 of docs/performance.md's run) and %d ms a transaction:\n\n%s",
		cpu.Seconds()*1000, Latency.Milliseconds(), Table(cpu, 10_000, 100_000, 1_000_000))
	const path = "../../docs/scaling.md"
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(page), tableBegins)
	_, after, ok2 := strings.Cut(rest, tableEnds)
	if !ok || !ok2 {
		t.Fatalf("%s has no model's table between %q and %q", path, tableBegins, tableEnds)
	}
	if *update {
		if err := os.WriteFile(path, []byte(before+tableBegins+want+tableEnds+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got, _, _ := strings.Cut(rest, tableEnds); got != want {
		t.Errorf("%s's table is not the model's (go test ./infra/scaling -update):\n%s\nwant:\n%s", path, got, want)
	}
}
