package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// goal is a bound on one figure of the benchmarks whose names match,
// and how the goals table writes it.
type goal struct {
	bench *regexp.Regexp
	most  bool // the figure must be at most limit; else at least
	limit float64
	what  string
}

var (
	// A handler's rate over its floor's.
	floorGoal = goal{regexp.MustCompile(`^BenchmarkAgainstFloor/(start|replay|lookup|delivery|redelivery)$`), false, 0.7, "≥ 0.7×"}
	// A start in an environment's time over a start's without one, in the
	// same run (contract v7).
	environmentGoal = goal{regexp.MustCompile(`^BenchmarkAgainstFloor/start-in-environment$`), true, 1.3, "≤ 1.3×"}
	// The DynamoDB requests of a webhook delivery, new and redelivered
	// (contract, section 4, Budget).
	deliveryRequestsGoals = []goal{
		{regexp.MustCompile(`^BenchmarkAgainstFloor/delivery$`), true, 3, "≤ 3"},
		{regexp.MustCompile(`^BenchmarkAgainstFloor/redelivery$`), true, 4, "≤ 4"},
	}
	// A request's cost at 100,000 items over its cost at 200.
	costGoal = goal{regexp.MustCompile(`^BenchmarkCost/.+/items=100000$`), true, 2, "≤ 2×"}
	// A burst's requests beside its 16 shard queries and their 16 reads of
	// environments, per fired trigger: at most its transaction
	// (store.Table.Grouped shares one between several).
	requestsGoal = goal{regexp.MustCompile(`^BenchmarkBurst/`), true, 1, "≤ 1 (one transaction), beside the shards' 32 reads"}
	// A burst's seconds at concurrency 32 (written, by burstRows, as the
	// same multiple of the burst's floor as its figure).
	burstGoals = []goal{
		{regexp.MustCompile(`^BenchmarkBurst/triggers=2000/concurrency=32$`), true, 1.5, ""},
		{regexp.MustCompile(`^BenchmarkBurst/triggers=10000/concurrency=32$`), true, 6, ""},
	}
	// A burst whose every trigger names an environment over the same
	// burst without (contract v7).
	environmentBurstGoal = goal{regexp.MustCompile(`^BenchmarkBurst/.+/environments$`), true, 1.1, "≤ 1.1×"}
	// A burst's rate at concurrency 32 over the same burst's at 1.
	speedupGoal = goal{regexp.MustCompile(`^BenchmarkBurst/.+/concurrency=32$`), false, 8, "≥ 8×"}
	// The CPU the firing's side (the firing, the SDK and the HTTP client)
	// spends per fired trigger, over what nextBench takes in the same
	// run: the machine's speed that day.
	cpuGoal = goal{regexp.MustCompile(`^BenchmarkBurst/triggers=\d+/concurrency=32$`), true, 450, "≤ 450×"}
	// A burst's seconds through the local stack, the firing's cold start
	// included, over its triggers times the proxy's latency.
	stackBurstGoal = goal{regexp.MustCompile(`^BenchmarkStackBurst/`), true, 0.10, ""}
	// A cold start over hello world's.
	coldGoal = goal{regexp.MustCompile(`^BenchmarkColdStart/.+/(no-io|settings)$`), true, 1.5, "≤ 1.5×"}
	// A function's stripped arm64 bootstrap, in MiB.
	sizeGoal = goal{regexp.MustCompile(`^BenchmarkSize/.+Function$`), true, 12, "≤ 12 MiB"}
	// A webhook prompt rendered from the worst body of its kind at the
	// hook's size limit, in nanoseconds (the contract's "well under a
	// second").
	renderGoal = goal{regexp.MustCompile(`^BenchmarkRenderWorst/`), true, 50e6, "≤ 50 ms"}
)

// burstSize reads a burst's size from its name.
var burstSize = regexp.MustCompile(`/triggers=(\d+)/`)

// requestsRow is a burst's requests beside its 16 shard queries, per
// fired trigger, and how many slots each transaction carried.
func requestsRow(name string, requests float64) row {
	m := burstSize.FindStringSubmatch(name)
	if m == nil {
		return row{figure: format(requests) + " DynamoDB requests", goal: "no goal"}
	}
	size, _ := strconv.ParseFloat(m[1], 64)
	v := (requests - 32) / size
	return requestsGoal.judge(name, fmt.Sprintf("%s DynamoDB requests per fired trigger beside the 16 shard queries and their due triggers' 16 reads of environments (%s requests for %s triggers: transactions of %s slots on average)",
		format(v), format(requests), m[1], format(1/v)), v)
}

// nextBench is the yardstick of the firing's CPU; floorBench the bare
// TransactWriteItems call the firing makes per trigger, the SDK's floor.
const (
	nextBench  = "BenchmarkNext/0_9_*_*_1-5"
	floorBench = "BenchmarkBurst/transact-floor/concurrency=32"
)

// hello is hello world's case among the cold starts and the sizes,
// sdkFloor the SDK's floor's (hello world with the clients every function
// builds).
const (
	hello    = "/hello"
	sdkFloor = "/sdk-floor"
)

// floorNote names a floor's row among the cold starts and the sizes.
func floorNote(name string) string {
	switch {
	case strings.HasSuffix(name, hello):
		return ", hello world"
	case strings.HasSuffix(name, sdkFloor):
		return ", the SDK's floor"
	}
	return ""
}

// none matches no benchmark: a goal of none judges nothing.
var none = regexp.MustCompile(`^$`)

// judge is a figure's row beside its goal, judged on v, or beside none
// when the goal is not the benchmark's.
func (g goal) judge(name, figure string, v float64) row {
	if !g.bench.MatchString(name) {
		return row{figure: figure, goal: "no goal"}
	}
	ok := v >= g.limit
	if g.most {
		ok = v <= g.limit
	}
	return row{figure: figure, goal: g.what, holds: verdict(ok)}
}

// row is one line of the goals table: a figure, as a ratio to its floor
// where it has one, beside its goal.
type row struct{ bench, figure, goal, holds string }

// goalRows is the goals table: every figure that has a goal or a floor,
// in the order of the benchmarks.
func goalRows(results []result) []row {
	byName := map[string]result{}
	for _, r := range results {
		byName[r.name] = r
	}
	var rows []row
	for _, r := range results {
		for _, c := range checks(r, byName) {
			c.bench = r.name
			rows = append(rows, c)
		}
	}
	return rows
}

// environmentRows are the rows of what environments cost (contract v7): a
// start in one over a start without, and a burst whose every trigger
// names one over the same burst without, both in the same run.
func environmentRows(r result, byName map[string]result) []row {
	var rows []row
	if v, ok := r.figures["x-start"]; ok {
		rows = append(rows, environmentGoal.judge(r.name, format(1/v)+"× a start without an environment", 1/v))
	}
	if without, ok := byName[strings.TrimSuffix(r.name, "/environments")]; ok && environmentBurstGoal.bench.MatchString(r.name) {
		v := r.figures["s/burst"] / without.figures["s/burst"]
		rows = append(rows, environmentBurstGoal.judge(r.name, format(v)+"× the same burst without environments", v))
	}
	return rows
}

// checks are one benchmark's rows of the goals table.
func checks(r result, byName map[string]result) []row {
	var rows []row
	name, f := r.name, r.figures
	if v, ok := f["x-floor"]; ok {
		rows = append(rows, floorGoal.judge(name, format(v)+"× its floor", v))
	}
	rows = append(rows, environmentRows(r, byName)...)
	for _, g := range deliveryRequestsGoals {
		if v, ok := f["requests/op"]; ok && g.bench.MatchString(name) {
			rows = append(rows, g.judge(name, requests(v), v))
		}
	}
	if v, ok := f["ms/delivery"]; ok {
		rows = append(rows, row{figure: fmt.Sprintf("%s ms a delivery, at once (%s deliveries/s, all in %s s; %s DynamoDB requests a delivery; %s retried after a 503); one session and one run per key",
			format(v), format(f["deliveries/s"]), format(f["s/burst"]), format(f["requests/delivery"]), format(f["retried"])), goal: "no goal"})
	}
	if small, ok := byName[strings.TrimSuffix(name, "items=100000")+"items=200"]; ok && strings.HasSuffix(name, "/items=100000") {
		v := f["ns/op"] / small.figures["ns/op"]
		rows = append(rows, costGoal.judge(name, format(v)+"× its cost at 200 items", v))
	}
	if whole, ok := byName[strings.TrimSuffix(name, "/locked")+"/request"]; ok && strings.HasPrefix(name, "BenchmarkLockHeld/") && strings.HasSuffix(name, "/locked") {
		rows = append(rows, row{figure: format(f["ns/op"]/whole.figures["ns/op"]) + "× the whole request's work, under the lock", goal: "no goal"})
	}
	if v, ok := f["requests"]; ok {
		rows = append(rows, requestsRow(name, v))
	}
	if _, ok := f["floor-s"]; ok {
		rows = append(rows, burstRows(r)...)
	}
	if _, ok := f["x-delay"]; ok {
		rows = append(rows, stackBurstRow(r))
	}
	rows = append(rows, cpuRows(r, byName)...)
	if one, ok := byName[strings.TrimSuffix(name, "32")+"1"]; ok && speedupGoal.bench.MatchString(name) {
		v := f["triggers/s"] / one.figures["triggers/s"]
		rows = append(rows, speedupGoal.judge(name, format(v)+"× concurrency 1", v))
	}
	if v, ok := f["x-hello"]; ok && !strings.HasSuffix(name, hello) {
		figure := format(v) + "× hello world"
		if h, ok := byName["BenchmarkColdStart"+hello]; ok {
			figure += fmt.Sprintf(" (%s ms over %s ms", format(f["ms-median"]), format(h.figures["ms-median"]))
			if sdk, ok := byName["BenchmarkColdStart"+sdkFloor]; ok && !strings.HasSuffix(name, sdkFloor) {
				figure += fmt.Sprintf("; %s× the SDK's floor", format(f["ms-median"]/sdk.figures["ms-median"]))
			}
			figure += ")"
		}
		rows = append(rows, coldGoal.judge(name, figure+floorNote(name), v))
	}
	if v, ok := f["ns/op"]; ok && renderGoal.bench.MatchString(name) {
		rows = append(rows, renderGoal.judge(name, duration(v)+" to render the worst body of its kind at 256 KiB", v))
	}
	rows = append(rows, endpointRows(r, byName)...)
	if v, ok := f["MiB"]; ok && strings.HasPrefix(name, "BenchmarkSize/") {
		figure := fmt.Sprintf("%s MiB (%s MiB zipped)", format(v), format(f["MiB-zipped"]))
		rows = append(rows, sizeGoal.judge(name, figure+floorNote(name), v))
	}
	return rows
}

// burstRows set a burst's time against its floor, the latency alone: the
// burst's size over the concurrency, times the proxy's latency, which no
// code and no endpoint goes below. A goal in seconds is the same multiple
// of that floor. A burst shares the machine's cores with the embedded
// endpoint, whose CPU DynamoDB's would not take from the function: the
// goal is judged again on what the firing's side alone spends over the
// cores, the least the burst could take without the endpoint.
func burstRows(r result) []row {
	floor, took := r.figures["floor-s"], r.figures["s/burst"]
	measured := fmt.Sprintf("%s× its floor (%s s over %s s)", format(took/floor), format(took), format(floor))
	g := goal{bench: none}
	for _, bg := range burstGoals {
		if bg.bench.MatchString(r.name) {
			g = bg
			g.what = fmt.Sprintf("≤ %s× (%s s)", format(g.limit/floor), format(g.limit))
		}
	}
	rows := []row{g.judge(r.name, measured, took)}
	if cpu, ok := r.figures["cpu-s"]; ok && rows[0].holds != "" {
		own := cpu / float64(r.procs)
		rows = append(rows, g.judge(r.name, fmt.Sprintf("the firing's side alone: %s× its floor (%s CPU-s over %d cores: %s s; the endpoint's process: %s CPU-s; the proxy's: %s CPU-s)",
			format(own/floor), format(cpu), r.procs, format(own), format(r.figures["endpoint-cpu-s"]), format(r.figures["proxy-cpu-s"])), own))
	}
	return rows
}

// stackBurstRow sets a burst through the local stack (the gateway, the
// runtime emulator, the firing's bootstrap, the endpoint in the stack's
// process, the proxy) as a test from outside times it, the firing's first
// invocation and so its bootstrap's cold start included, over its
// triggers × the proxy's latency (x-delay), against the goal of 0.10 ×
// that; beside it the parts of the burst (the bootstrap's
// initialisation, the firing's handler), the same burst warm, and the
// CPU each process spent on the cold one.
func stackBurstRow(r result) row {
	f := r.figures
	g := stackBurstGoal
	delay := f["s/burst"] / f["x-delay"] // the triggers × 5 ms
	g.what = fmt.Sprintf("≤ %s× (%s s)", format(g.limit), format(g.limit*delay))
	return g.judge(r.name, fmt.Sprintf("%s× the triggers × 5 ms (%s s over %s s; of which the bootstrap's initialisation %s ms, the firing's handler %s ms; warm: %s×, %s s, the handler %s ms; CPU-s: the stack's process %s, the firing's bootstrap %s, its emulator %s, the proxy's %s)",
		format(f["x-delay"]), format(f["s/burst"]), format(delay), format(f["init-ms"]), format(f["handler-ms"]),
		format(f["warm-x-delay"]), format(f["warm-s/burst"]), format(f["warm-handler-ms"]),
		format(f["stack-cpu-s"]), format(f["firing-cpu-s"]), format(f["emulator-cpu-s"]), format(f["proxy-cpu-s"])), f["x-delay"])
}

// endpointGoal bounds what the embedded endpoint's process spends, in CPU,
// on one fired trigger's requests over HTTP (BenchmarkFiredOverHTTP) over
// what BenchmarkNext takes for one weekday schedule in the same run.
var endpointGoal = goal{regexp.MustCompile(`^BenchmarkFiredOverHTTP/`), true, 500, "≤ 500×"}

// endpointRows set the endpoint's CPU per fired trigger over HTTP against
// BenchmarkNext's time, beside its goal, and the handler's part of it
// without the network (BenchmarkFiredRequests/fired), with no goal.
func endpointRows(r result, byName map[string]result) []row {
	n, ok := byName[nextBench]
	if !ok {
		return nil
	}
	figure, what := r.figures["endpoint-cpu-ns/fired"], "the endpoint's process's CPU on one fired trigger's requests over HTTP"
	if r.name == "BenchmarkFiredRequests/fired" {
		figure, what = r.figures["ns/op"], "the endpoint's handler alone on one fired trigger's requests, without the network (a part of the figure over HTTP)"
	} else if !endpointGoal.bench.MatchString(r.name) {
		return nil
	}
	v := figure / n.figures["ns/op"]
	return []row{endpointGoal.judge(r.name, fmt.Sprintf("%s× `%s` (%s over %s), %s",
		format(v), nextBench, duration(figure), duration(n.figures["ns/op"]), what), v)}
}

// cpuRows are the rows of CPU set against nextBench: a burst's per fired
// trigger, the session events function's per event.
func cpuRows(r result, byName map[string]result) []row {
	var rows []row
	if _, ok := r.figures["cpu-µs/trigger"]; ok {
		rows = append(rows, cpuRow(r, byName))
	}
	if _, ok := r.figures["cpu-ns/event"]; ok {
		rows = append(rows, announceRow(r, byName))
	}
	return rows
}

// announceRow is the session events function's figures (contract v7):
// the events one invocation announces a second, and the CPU per event
// (the function's side and the stand-ins' in one process) over
// nextBench's time in the same run. The contract gives them no goal.
func announceRow(r result, byName map[string]result) row {
	f := r.figures
	figure := fmt.Sprintf("%s events/s in one invocation of 100; %s µs of CPU per event", format(f["events/s"]), format(f["cpu-ns/event"]/1000))
	if next, ok := byName[nextBench]; ok {
		figure += fmt.Sprintf(", %s× `%s` (%s ns)", format(f["cpu-ns/event"]/next.figures["ns/op"]), nextBench, format(next.figures["ns/op"]))
	}
	return row{figure: figure, goal: "no goal"}
}

// cpuRow is the CPU a burst's side spends per fired trigger (or the
// floor's per call), over nextBench's time in the same run, with its
// allocations and bytes, and the SDK's floor beside the firing's.
func cpuRow(r result, byName map[string]result) row {
	f := r.figures
	us := f["cpu-µs/trigger"]
	what := "CPU per fired trigger, the firing's side"
	if r.name == floorBench {
		what = "CPU per bare TransactWriteItems, the SDK's floor"
	}
	detail := fmt.Sprintf("%s µs; %s allocations, %s bytes", format(us), format(f["allocs/trigger"]), format(f["B/trigger"]))
	if floor, ok := byName[floorBench]; ok && r.name != floorBench {
		detail += fmt.Sprintf("; the SDK's floor %s µs, the firing %s× it", format(floor.figures["cpu-µs/trigger"]), format(us/floor.figures["cpu-µs/trigger"]))
	}
	next, ok := byName[nextBench]
	if !ok {
		return row{figure: fmt.Sprintf("%s: %s (no %s to set it against)", what, detail, nextBench), goal: "no goal"}
	}
	v := us * 1000 / next.figures["ns/op"]
	return cpuGoal.judge(r.name, fmt.Sprintf("%s: %s× %s (%s; %s ns)", what, format(v), nextBench, detail, format(next.figures["ns/op"])), v)
}

// requests writes a count of DynamoDB requests.
func requests(v float64) string {
	if v == 1 {
		return "1 DynamoDB request"
	}
	return format(v) + " DynamoDB requests"
}

func verdict(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// timed are the benchmarks timed over many iterations (a burst's time,
// the firing's, through the local stack or the deliveries', is in the
// goals table), for the table
// of times and allocations.
func timed(results []result) []result {
	var out []result
	for _, r := range results {
		if _, ok := r.figures["ns/op"]; ok && !strings.HasPrefix(r.name, "BenchmarkBurst/") && !strings.HasPrefix(r.name, "BenchmarkStackBurst/") && !strings.HasPrefix(r.name, "BenchmarkDeliveries/") {
			out = append(out, r)
		}
	}
	return out
}

// writeGoals and writeFigures write the two tables as Markdown, the
// benchmarks' names as code (a schedule's stars are not emphasis).
func writeGoals(b *strings.Builder, rows []row) {
	b.WriteString("| benchmark | figure | goal | holds |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", r.bench, r.figure, r.goal, r.holds)
	}
}

func writeFigures(b *strings.Builder, results []result) {
	b.WriteString("| benchmark | time/op | B/op | allocs/op |\n|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", r.name, duration(r.figures["ns/op"]), optional(r, "B/op"), optional(r, "allocs/op"))
	}
}

func optional(r result, unit string) string {
	if v, ok := r.figures[unit]; ok {
		return format(v)
	}
	return ""
}

// duration writes nanoseconds in the unit that keeps them under 1,000.
func duration(ns float64) string {
	switch {
	case ns >= 1e9:
		return format(ns/1e9) + " s"
	case ns >= 1e6:
		return format(ns/1e6) + " ms"
	case ns >= 1e3:
		return format(ns/1e3) + " µs"
	}
	return format(ns) + " ns"
}
