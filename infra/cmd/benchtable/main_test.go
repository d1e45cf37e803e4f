package main

import (
	"strings"
	"testing"
)

// TestTable: figures are read from go test's benchmark lines (the
// processor suffix dropped), each goal is judged on its figure, a burst is
// set beside its floor and a burst at 32 against the same burst at 1, and
// a request's cost on a large table against its cost on a small one; a
// burst's time goal is judged again on its own side's CPU over the cores.
func TestTable(t *testing.T) {
	out := `goos: linux
BenchmarkBurst/triggers=2000/concurrency=32-2   1  1100000000 ns/op  1.1 s/burst  1818 triggers/s  0.315 floor-s  16 extra-requests  6020 items  0.2 endpoint-ms  2.4 cpu-s  1.5 endpoint-cpu-s
BenchmarkBurst/triggers=2000/concurrency=1-2    1  10500000000 ns/op  10.5 s/burst  190 triggers/s  10 floor-s  17 extra-requests  6020 items  0.2 endpoint-ms
BenchmarkAgainstFloor/lookup-2  4000  250000 ns/op  0.89 x-floor
BenchmarkCost/get/items=200-2  10000  100000 ns/op
BenchmarkCost/get/items=100000-2  10000  250000 ns/op
BenchmarkNext-2  1000000  200 ns/op  0 B/op  0 allocs/op
PASS
`
	results, err := parse(strings.NewReader(out))
	if err != nil || len(results) != 6 || results[0].name != "BenchmarkBurst/triggers=2000/concurrency=32" || results[0].figures["s/burst"] != 1.1 {
		t.Fatalf("%+v %v", results, err)
	}
	var lines []string
	for _, r := range table(results) {
		lines = append(lines, strings.Join([]string{r.bench, r.figures, r.goal, r.holds}, " | "))
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"↳ | 16 extra-requests | one request per fired trigger, and the 16 shard queries | yes",
		"↳ | 17 extra-requests | one request per fired trigger, and the 16 shard queries | **no**",
		"↳ | 1.1 s/burst | 2,000 fired in ≤ 1.5 s | yes",
		"↳ | 1.2 s: 2.4 CPU-s of the firing's side over 2 cores (the endpoint's process: 1.5 CPU-s) | 2,000 fired in ≤ 1.5 s, the endpoint's CPU aside | yes",
		"↳ | 3.49× its floor | floor 0.315 s (the burst's size over the concurrency, times 5 ms) | ",
		"↳ | 9.57× the rate at concurrency 1 | ≥ 8× | yes",
		"↳ | 2.5× its cost at 200 items | ≤ 2× | **no**",
		"↳ | 0.89 x-floor | ≥ 0.7 × its floor | yes",
		"BenchmarkNext | 200 ns/op, 0 B/op, 0 allocs/op |  | ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no line %q in\n%s", want, got)
		}
	}
}
