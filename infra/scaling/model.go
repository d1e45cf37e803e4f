// Package scaling is a model of one minute of the firing: how long K
// invocations take to fire N due triggers, and which limit binds them.
// Each invocation keeps Concurrency triggers in flight, whose new
// sessions go out grouped, firing.Sends(Concurrency) transactions at a
// time, each carrying an equal share of them: a transaction in flight
// waits for one request's latency and spends its triggers' CPU on the
// invocation's cores, a closed queueing network solved by mean value
// analysis (the cores as one queue, Seidmann's approximation of several
// servers). DynamoDB caps the whole: the table's write units and the due
// index's partitions. docs/scaling.md's table is this model's, and
// TestModelAgainstBursts holds it to the bursts docs/performance.md
// measured.
package scaling

import (
	"time"

	"github.com/cloud-agent/control-plane/shared/firing"
)

// DynamoDB's costs of one fired trigger and its limits (docs/scaling.md,
// "What one fired trigger costs").
const (
	// TableUnits is the write units of a fired trigger's transaction in
	// the table: four items under 1 KB, transactional writes at double.
	TableUnits = 8
	// ShardUnits is what its advance writes to the due index's partition
	// of its shard (the entry deleted and written again).
	ShardUnits = 2
	// PartitionUnits is what one partition takes per second.
	PartitionUnits = 1000
	// FullVCPU is the memory (MB) at which Lambda gives one vCPU; below
	// it, a share in proportion.
	FullVCPU = 1769
	// Firing is how long an invocation may fire: its 60 seconds less the
	// 10 it keeps in reserve.
	Firing = 50 * time.Second
)

// Config is one deployment's (or one local run's) side of the minute.
type Config struct {
	// Invocations is K, the schedules that share the shards.
	Invocations int
	// Concurrency is the triggers each invocation keeps in flight.
	Concurrency int
	// Cores is what each invocation's CPU runs on (Lambda: memory over
	// FullVCPU; locally the machine's cores, shared with the endpoint).
	Cores float64
	// CPU is one fired trigger's CPU on one core, everything that runs
	// on Cores (locally the endpoint's share too).
	CPU time.Duration
	// Latency is one request's round trip.
	Latency time.Duration
	// TableWrites is the write units per second the table takes (its
	// quota, or its warm throughput); 0 is no limit.
	TableWrites float64
	// Shards is the partitions of the due index; 0 is no limit.
	Shards int
}

// Bound is a limit on the triggers fired per second, by what imposes it.
type Bound struct {
	Name string
	// PerSecond is the triggers per second it allows.
	PerSecond float64
}

// Minute is what the model says of a burst.
type Minute struct {
	// Wall is the burst's time: the shard queries' round trip, then the
	// triggers at the rate of the tightest bound.
	Wall time.Duration
	// Binding is the tightest bound; Bounds all of them.
	Binding Bound
	Bounds  []Bound
}

// Fits reports whether the burst is fired within the minute's Firing.
func (m Minute) Fits() bool { return m.Wall <= Firing }

// Fire is the model of a burst of n due triggers under c.
func (c Config) Fire(n int) Minute {
	bounds := []Bound{{"the invocations' CPU and latency", float64(c.Invocations) * c.throughput()}}
	if c.TableWrites > 0 {
		bounds = append(bounds, Bound{"the table's write units", c.TableWrites / TableUnits})
	}
	if c.Shards > 0 {
		bounds = append(bounds, Bound{"the due index's partitions", float64(c.Shards) * PartitionUnits / ShardUnits})
	}
	m := Minute{Bounds: bounds, Binding: bounds[0]}
	for _, b := range bounds[1:] {
		if b.PerSecond < m.Binding.PerSecond {
			m.Binding = b
		}
	}
	m.Wall = c.Latency + time.Duration(float64(n)/m.Binding.PerSecond*float64(time.Second))
	return m
}

// throughput is one invocation's triggers per second: mean value analysis
// of the grouped transactions cycling between the request's latency (a
// delay) and the cores, each carrying Concurrency over their number of
// triggers, and so their CPU. With m cores of service s, the cores are a
// queue of service s/m and a further delay of s(m-1)/m (Seidmann); below
// one core, a queue of service s/m.
func (c Config) throughput() float64 {
	sends := firing.Sends(c.Concurrency)
	carried := float64(c.Concurrency) / float64(sends)
	s := carried * c.CPU.Seconds()
	m := c.Cores
	queue, delay := s/m, c.Latency.Seconds()
	if m > 1 {
		delay += s * (m - 1) / m
	}
	var x, q float64
	for n := 1; n <= sends; n++ {
		r := queue * (1 + q)
		x = float64(n) / (delay + r)
		q = x * r
	}
	return x * carried
}

// Lambda is an invocation's cores at memory MB.
func Lambda(memory int) float64 { return float64(memory) / FullVCPU }
