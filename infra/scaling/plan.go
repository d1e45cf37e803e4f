package scaling

import (
	"fmt"
	"strings"
	"time"
)

// Deployment is what an operator sets: the template's parameters and
// variables, the table's quota and the due index's shards.
type Deployment struct {
	// Schedules is FiringSchedules, Concurrency FIRING_CONCURRENCY,
	// Memory the firing's MB.
	Schedules, Concurrency, Memory int
	// TableWrites is the table's write units per second (the account's
	// quota, 40,000 by default); Shards the due index's (16).
	TableWrites float64
	Shards      int
}

// Template is the template's deployment.
var Template = Deployment{Schedules: 1, Concurrency: 64, Memory: 512, TableWrites: 40000, Shards: 16}

// Latency is the model's DynamoDB round trip for a transaction of four
// items in the region: an assumption to check after a deploy
// (SuccessfulRequestLatency).
const Latency = 15 * time.Millisecond

// On is the model of d for a fired trigger's CPU on one Lambda core.
func (d Deployment) On(cpu time.Duration) Config {
	return Config{Invocations: d.Schedules, Concurrency: d.Concurrency, Cores: Lambda(d.Memory), CPU: cpu,
		Latency: Latency, TableWrites: d.TableWrites, Shards: d.Shards}
}

// The levers, each from the template's value up.
var (
	schedules   = []int{1, 2, 4, 8, 16}
	concurrency = []int{64, 128, 256}
	memory      = []int{512, 1024, 1769, 3008}
	tableWrites = []float64{40000, 80000, 160000, 320000}
	shards      = []int{16, 32, 64}
)

// Needs is the cheapest deployment that fires n due triggers within the
// minute at cpu per trigger: first the fewest shards and the lowest table
// quota (changes that take an operation), then the least memory over all
// invocations (what a minute costs), then the least concurrency. ok is
// false when no deployment of the levers fits.
func Needs(n int, cpu time.Duration) (d Deployment, ok bool) {
	var best Deployment
	for _, sh := range shards {
		for _, tw := range tableWrites {
			for _, k := range schedules {
				for _, mem := range memory {
					for _, c := range concurrency {
						d := Deployment{Schedules: k, Concurrency: c, Memory: mem, TableWrites: tw, Shards: sh}
						if d.On(cpu).Fire(n).Fits() && (!ok || less(d.cost(), best.cost())) {
							best, ok = d, true
						}
					}
				}
			}
		}
	}
	return best, ok
}

// cost orders deployments as Needs prefers them.
func (d Deployment) cost() [4]float64 {
	return [4]float64{float64(d.Shards), d.TableWrites, float64(d.Schedules * d.Memory), float64(d.Concurrency)}
}

func less(a, b [4]float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// Table is docs/scaling.md's table of the model: for each burst, what the
// template's deployment does with it and what deployment fires it within
// the minute, at cpu per fired trigger.
func Table(cpu time.Duration, bursts ...int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| due triggers | the template's deployment (%s) | the deployment that fires them within %.0f seconds | its burst |\n", describe(Template), Firing.Seconds())
	b.WriteString("|---|---|---|---|\n")
	for _, n := range bursts {
		now := Template.On(cpu).Fire(n)
		need, ok := Needs(n, cpu)
		cell := "none of the levers"
		burst := ""
		if ok {
			cell = describe(need)
			m := need.On(cpu).Fire(n)
			burst = fmt.Sprintf("%s, bound by %s", seconds(m.Wall), m.Binding.Name)
		}
		fmt.Fprintf(&b, "| %s | %s, bound by %s | %s | %s |\n", thousands(n), seconds(now.Wall), now.Binding.Name, cell, burst)
	}
	return b.String()
}

func describe(d Deployment) string {
	return fmt.Sprintf("FiringSchedules %d, %d at a time, %s MB, %s write units a second, %d shards",
		d.Schedules, d.Concurrency, thousands(d.Memory), thousands(int(d.TableWrites)), d.Shards)
}

func seconds(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return thousands(int(d.Round(time.Second).Seconds())) + " s"
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
