package main

import (
	"strings"
	"testing"
)

// TestTable: figures are read from go test's benchmark lines (the
// processor suffix dropped), each goal is judged on its figure, and a
// burst at 32 is judged against the same burst at 1.
func TestTable(t *testing.T) {
	out := `goos: linux
BenchmarkBurst/triggers=2000/concurrency=32-2   1  61271813495 ns/op  27.7 endpoint-ms  55.4 floor-s  1.008 requests/trigger  61.3 s/burst  32.6 triggers/s
BenchmarkBurst/triggers=2000/concurrency=1-2    1  78030626723 ns/op  30.7 endpoint-ms  61.4 floor-s  1.008 requests/trigger  78.0 s/burst  25.6 triggers/s
BenchmarkAgainstFloor/lookup-2  4000  250000 ns/op  0.89 x-floor
BenchmarkNext-2  1000000  200 ns/op  0 B/op  0 allocs/op
PASS
`
	results, err := parse(strings.NewReader(out))
	if err != nil || len(results) != 4 || results[0].name != "BenchmarkBurst/triggers=2000/concurrency=32" || results[0].figures["s/burst"] != 61.3 {
		t.Fatalf("%+v %v", results, err)
	}
	var lines []string
	for _, r := range table(results) {
		lines = append(lines, strings.Join([]string{r.bench, r.figures, r.goal, r.holds}, " | "))
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"↳ | 1.01 requests/trigger | requests per fired trigger ≤ 1.5 (floor 1) | yes",
		"↳ | 61.3 s/burst | 2,000 fired in ≤ 10 s | **no**",
		"↳ | 0.904 of the endpoint's floor",
		"↳ | 1.27× the rate at concurrency 1 | ≥ 8× (the endpoint allows at most 1.41×) | **no**",
		"↳ | 0.89 x-floor | ≥ 0.7 × its floor | yes",
		"BenchmarkNext | 200 ns/op, 0 B/op, 0 allocs/op |  | ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no line %q in\n%s", want, got)
		}
	}
}
