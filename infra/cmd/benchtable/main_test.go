package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sample is go test's output for one benchmark of each kind the tables
// know.
const sample = `goos: linux
BenchmarkAgainstFloor/transact-floor-2  4000  200000 ns/op  1 requests/op  60000 B/op  600 allocs/op
BenchmarkAgainstFloor/lookup-2  4000  250000 ns/op  0.89 x-floor  50000 B/op  610 allocs/op
BenchmarkAgainstFloor/start-2  4000  300000 ns/op  0.65 x-floor  80000 B/op  840 allocs/op
BenchmarkAgainstFloor/start-in-environment-2  4000  330000 ns/op  0.8 x-start  90000 B/op  900 allocs/op
BenchmarkAgainstFloor/delivery-floor-2  2000  500000 ns/op  2 requests/op  160000 B/op  1500 allocs/op
BenchmarkAgainstFloor/delivery-2  1500  700000 ns/op  4 requests/op  0.714 x-floor  210000 B/op  2200 allocs/op
BenchmarkAgainstFloor/redelivery-2  3000  300000 ns/op  1 requests/op  0.69 x-floor  70000 B/op  750 allocs/op
BenchmarkDeliveries/deliveries=1000/triggers=100-2  1  1062062693 ns/op  941.6 deliveries/s  0 kms-calls  1.062 ms/delivery  940.7 p50-ms  1060 p99-ms  1.999 requests/delivery  0 retried  1.062 s/burst  245538240 B/op  2356185 allocs/op
BenchmarkLockHeld/put/request-2  40000  32000 ns/op  12360 B/op  63 allocs/op
BenchmarkLockHeld/put/locked-2  160000  8000 ns/op  1616 B/op  8 allocs/op
BenchmarkCost/get/items=200-2  10000  100000 ns/op
BenchmarkCost/get/items=100000-2  10000  250000 ns/op
BenchmarkNext-2  1000000  200 ns/op  0 B/op  0 allocs/op
BenchmarkNext/0_9_*_*_1-5-2  1000000  300 ns/op  0 B/op  0 allocs/op
BenchmarkColdStart/hello-2  1  5.5 ms-init  9 ms-median  1 x-hello
BenchmarkColdStart/sdk-floor-2  1  9 ms-init  12.5 ms-median  1.39 x-hello
BenchmarkColdStart/SessionStartFunction/no-io-2  1  10 ms-init  13.5 ms-median  1.5 x-hello
BenchmarkColdStart/SessionStartFunction/settings-2  1  11 ms-init  17.1 ms-median  1.9 x-hello
BenchmarkColdStart/SessionStartFunction/dynamodb-2  1  11 ms-init  18.9 ms-median  2.1 x-hello
BenchmarkColdStart/TriggerHookFunction/no-io-2  1  10 ms-init  12.6 ms-median  1.4 x-hello
BenchmarkColdStart/TriggerHookFunction/dynamodb-2  1  11 ms-init  27 ms-median  3 x-hello
BenchmarkSize/SessionStartFunction-2  1  9.62 MiB  3.66 MiB-zipped  0 B/op  0 allocs/op
BenchmarkSize/hello-2  1  6 MiB  2.6 MiB-zipped  0 B/op  0 allocs/op
BenchmarkSize/sdk-floor-2  1  9 MiB  3.4 MiB-zipped  0 B/op  0 allocs/op
BenchmarkBurst/triggers=2000/concurrency=32-2   1  1100000000 ns/op  1.1 s/burst  1818 triggers/s  0.315 floor-s  366 requests  6020 items  0.2 endpoint-ms  2.4 cpu-s  1.5 endpoint-cpu-s  0.3 proxy-cpu-s  120 cpu-µs/trigger  500 allocs/trigger  60000 B/trigger
BenchmarkBurst/triggers=2000/concurrency=32/environments-2   1  1150000000 ns/op  1.15 s/burst  1739 triggers/s  0.315 floor-s  382 requests  6100 items  0.2 endpoint-ms  2.5 cpu-s  1.5 endpoint-cpu-s  0.3 proxy-cpu-s  125 cpu-µs/trigger  520 allocs/trigger  63000 B/trigger
BenchmarkBurst/triggers=2000/concurrency=1-2    1  10500000000 ns/op  10.5 s/burst  190 triggers/s  10 floor-s  2040 requests  6020 items  0.2 endpoint-ms  4.4 cpu-s  2.5 endpoint-cpu-s  0.5 proxy-cpu-s  220 cpu-µs/trigger  510 allocs/trigger  61000 B/trigger
BenchmarkBurst/triggers=10000/concurrency=32-2  1  7000000000 ns/op  7 s/burst  1428 triggers/s  1.56 floor-s  1266 requests  10100 items  0.5 endpoint-ms  11 cpu-s  6 endpoint-cpu-s  1.2 proxy-cpu-s  150 cpu-µs/trigger  505 allocs/trigger  60500 B/trigger
BenchmarkBurst/transact-floor/concurrency=32-2  1  700000000 ns/op  100 cpu-µs/trigger  380 allocs/trigger  48000 B/trigger
PASS
`

// TestTable: figures are read from go test's benchmark lines (the
// processor suffix dropped); every figure with a floor is written as a
// ratio to it beside its goal as the same ratio, and judged: a handler
// against its floor, a request's cost on a large table against a small
// one's, a cold start against hello world's (and beside the SDK's
// floor's), a burst's time against its
// latency alone (the goal in seconds over the same floor, judged again on
// the firing's side's CPU over the cores), a burst at 32 against the same
// burst at 1, the firing's CPU per fired trigger (and the SDK's floor's
// per call, the firing's beside it) against BenchmarkNext/0_9_*_*_1-5 of
// the same run; the requests of a burst, of a webhook delivery (new and
// redelivered) and the sizes are judged as they are; the 1,000
// deliveries' time is written with no goal, and so is any ratio without
// one. The table of times and
// allocations holds the benchmarks timed over many iterations (not the
// one-shot bursts of firings or deliveries), in units a reader reads.
func TestTable(t *testing.T) {
	results, err := parse(strings.NewReader(sample))
	if err != nil || len(results) != 29 || results[24].name != "BenchmarkBurst/triggers=2000/concurrency=32" || results[24].figures["s/burst"] != 1.1 || results[24].procs != 2 {
		t.Fatalf("%+v %v", results, err)
	}
	goals, figures := tables(results)
	for _, want := range []string{
		"| benchmark | figure | goal | holds |\n|---|---|---|---|\n| `BenchmarkAgainstFloor/lookup` | 0.89× its floor | ≥ 0.7× | yes |\n",
		"| `BenchmarkAgainstFloor/start` | 0.65× its floor | ≥ 0.7× | **no** |\n",
		"| `BenchmarkAgainstFloor/start-in-environment` | 1.25× a start without an environment | ≤ 1.3× | yes |\n",
		"| `BenchmarkBurst/triggers=2000/concurrency=32/environments` | 1.05× the same burst without environments | ≤ 1.1× | yes |\n",
		"| `BenchmarkAgainstFloor/delivery` | 0.714× its floor | ≥ 0.7× | yes |\n" +
			"| `BenchmarkAgainstFloor/delivery` | 4 DynamoDB requests | ≤ 3 | **no** |\n",
		"| `BenchmarkAgainstFloor/redelivery` | 0.69× its floor | ≥ 0.7× | **no** |\n" +
			"| `BenchmarkAgainstFloor/redelivery` | 1 DynamoDB request | ≤ 4 | yes |\n",
		"| `BenchmarkDeliveries/deliveries=1000/triggers=100` | 1.06 ms a delivery, at once (942 deliveries/s, all in 1.06 s; 2 DynamoDB requests a delivery; 0 retried after a 503); one session and one run per key | no goal |  |\n",
		"| `BenchmarkColdStart/TriggerHookFunction/no-io` | 1.4× hello world (12.6 ms over 9 ms; 1.01× the SDK's floor) | ≤ 1.5× | yes |\n",
		"| `BenchmarkColdStart/TriggerHookFunction/dynamodb` | 3× hello world (27 ms over 9 ms; 2.16× the SDK's floor) | no goal |  |\n",
		"| `BenchmarkLockHeld/put/locked` | 0.25× the whole request's work, under the lock | no goal |  |\n",
		"| `BenchmarkCost/get/items=100000` | 2.5× its cost at 200 items | ≤ 2× | **no** |\n",
		"| `BenchmarkColdStart/SessionStartFunction/no-io` | 1.5× hello world (13.5 ms over 9 ms; 1.08× the SDK's floor) | ≤ 1.5× | yes |\n",
		"| `BenchmarkColdStart/SessionStartFunction/settings` | 1.9× hello world (17.1 ms over 9 ms; 1.37× the SDK's floor) | ≤ 1.5× | **no** |\n",
		"| `BenchmarkColdStart/SessionStartFunction/dynamodb` | 2.1× hello world (18.9 ms over 9 ms; 1.51× the SDK's floor) | no goal |  |\n",
		"| `BenchmarkSize/SessionStartFunction` | 9.62 MiB (3.66 MiB zipped) | ≤ 12 MiB | yes |\n",
		"| `BenchmarkSize/hello` | 6 MiB (2.6 MiB zipped), hello world | no goal |  |\n",
		"| `BenchmarkSize/sdk-floor` | 9 MiB (3.4 MiB zipped), the SDK's floor | no goal |  |\n",
		"| `BenchmarkColdStart/sdk-floor` | 1.39× hello world (12.5 ms over 9 ms), the SDK's floor | no goal |  |\n",
		"| `BenchmarkBurst/triggers=2000/concurrency=32` | 0.167 DynamoDB requests per fired trigger beside the 16 shard queries and their due triggers' 16 reads of environments (366 requests for 2000 triggers: transactions of 5.99 slots on average) | ≤ 1 (one transaction), beside the shards' 32 reads | yes |\n" +
			"| `BenchmarkBurst/triggers=2000/concurrency=32` | 3.49× its floor (1.1 s over 0.315 s) | ≤ 4.76× (1.5 s) | yes |\n" +
			"| `BenchmarkBurst/triggers=2000/concurrency=32` | the firing's side alone: 3.81× its floor (2.4 CPU-s over 2 cores: 1.2 s; the endpoint's process: 1.5 CPU-s; the proxy's: 0.3 CPU-s) | ≤ 4.76× (1.5 s) | yes |\n" +
			"| `BenchmarkBurst/triggers=2000/concurrency=32` | CPU per fired trigger, the firing's side: 400× BenchmarkNext/0_9_*_*_1-5 (120 µs; 500 allocations, 60000 bytes; the SDK's floor 100 µs, the firing 1.2× it; 300 ns) | ≤ 450× | yes |\n" +
			"| `BenchmarkBurst/triggers=2000/concurrency=32` | 9.57× concurrency 1 | ≥ 8× | yes |\n",
		"| `BenchmarkBurst/triggers=2000/concurrency=1` | 1 DynamoDB requests per fired trigger beside the 16 shard queries and their due triggers' 16 reads of environments (2040 requests for 2000 triggers: transactions of 0.996 slots on average) | ≤ 1 (one transaction), beside the shards' 32 reads | **no** |\n" +
			"| `BenchmarkBurst/triggers=2000/concurrency=1` | 1.05× its floor (10.5 s over 10 s) | no goal |  |\n" +
			"| `BenchmarkBurst/triggers=2000/concurrency=1` | CPU per fired trigger, the firing's side: 733× BenchmarkNext/0_9_*_*_1-5 (220 µs; 510 allocations, 61000 bytes; the SDK's floor 100 µs, the firing 2.2× it; 300 ns) | no goal |  |\n",
		"| `BenchmarkBurst/triggers=10000/concurrency=32` | 4.49× its floor (7 s over 1.56 s) | ≤ 3.85× (6 s) | **no** |\n" +
			"| `BenchmarkBurst/triggers=10000/concurrency=32` | the firing's side alone: 3.53× its floor (11 CPU-s over 2 cores: 5.5 s; the endpoint's process: 6 CPU-s; the proxy's: 1.2 CPU-s) | ≤ 3.85× (6 s) | yes |\n" +
			"| `BenchmarkBurst/triggers=10000/concurrency=32` | CPU per fired trigger, the firing's side: 500× BenchmarkNext/0_9_*_*_1-5 (150 µs; 505 allocations, 60500 bytes; the SDK's floor 100 µs, the firing 1.5× it; 300 ns) | ≤ 450× | **no** |\n" +
			"| `BenchmarkBurst/transact-floor/concurrency=32` | CPU per bare TransactWriteItems, the SDK's floor: 333× BenchmarkNext/0_9_*_*_1-5 (100 µs; 380 allocations, 48000 bytes; 300 ns) | no goal |  |\n",
	} {
		if !strings.Contains(goals, want) {
			t.Errorf("no lines\n%s in\n%s", want, goals)
		}
	}
	for _, unwanted := range []string{"AgainstFloor/transact-floor", "delivery-floor", "items=200`", "BenchmarkColdStart/hello", "`BenchmarkNext", "/put/request"} {
		if strings.Contains(goals, unwanted) {
			t.Errorf("the goals table names %q, which has no goal and no floor of its own:\n%s", unwanted, goals)
		}
	}
	wantFigures := "| benchmark | time/op | B/op | allocs/op |\n|---|---|---|---|\n" +
		"| `BenchmarkAgainstFloor/transact-floor` | 200 µs | 60000 | 600 |\n" +
		"| `BenchmarkAgainstFloor/lookup` | 250 µs | 50000 | 610 |\n" +
		"| `BenchmarkAgainstFloor/start` | 300 µs | 80000 | 840 |\n" +
		"| `BenchmarkAgainstFloor/start-in-environment` | 330 µs | 90000 | 900 |\n" +
		"| `BenchmarkAgainstFloor/delivery-floor` | 500 µs | 160000 | 1500 |\n" +
		"| `BenchmarkAgainstFloor/delivery` | 700 µs | 210000 | 2200 |\n" +
		"| `BenchmarkAgainstFloor/redelivery` | 300 µs | 70000 | 750 |\n" +
		"| `BenchmarkLockHeld/put/request` | 32 µs | 12360 | 63 |\n" +
		"| `BenchmarkLockHeld/put/locked` | 8 µs | 1616 | 8 |\n" +
		"| `BenchmarkCost/get/items=200` | 100 µs |  |  |\n" +
		"| `BenchmarkCost/get/items=100000` | 250 µs |  |  |\n" +
		"| `BenchmarkNext` | 200 ns | 0 | 0 |\n" +
		"| `BenchmarkNext/0_9_*_*_1-5` | 300 ns | 0 | 0 |\n"
	if figures != wantFigures {
		t.Errorf("the table of times and allocations is\n%s\nwant\n%s", figures, wantFigures)
	}
}

// TestPage: -page writes page.md with the two tables in place of their
// markers, and prints the tables; docs/performance.md is such a page, as
// `make bench` writes it: its text is page.md's, and between the parts of
// the text stand Markdown tables and nothing else.
func TestPage(t *testing.T) {
	results, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := render(results)
	if err != nil {
		t.Fatal(err)
	}
	goals, figures := tables(results)
	file := filepath.Join(t.TempDir(), "performance.md")
	var out strings.Builder
	if err := run(strings.NewReader(sample), &out, file); err != nil {
		t.Fatal(err)
	}
	if written, err := os.ReadFile(file); err != nil || string(written) != rendered || out.String() != goals+"\n"+figures {
		t.Errorf("-page wrote %q (%v) and printed\n%s", written, err, out.String())
	}
	if !strings.Contains(rendered, "## Goals\n\n"+goals+"\n## Times and allocations\n") || !strings.Contains(rendered, figures) || strings.Contains(rendered, "<!--") {
		t.Errorf("the page does not hold the tables in place of their markers:\n%s", rendered)
	}

	doc, err := os.ReadFile("../../../docs/performance.md")
	if err != nil {
		t.Fatal(err)
	}
	rest := string(doc)
	parts := strings.Split(strings.NewReplacer(goalsMarker+"\n", "\x00", figuresMarker+"\n", "\x00").Replace(page), "\x00")
	for i, part := range parts {
		at := strings.Index(rest, part)
		if at < 0 || i == 0 && at != 0 {
			t.Fatalf("docs/performance.md is not page.md with this run's tables (edit infra/cmd/benchtable/page.md, then `make bench BENCH_PAGE=docs/performance.md`): page.md text %d is not where expected:\n%s", i, part)
		}
		between := rest[:at]
		for _, line := range strings.SplitAfter(between, "\n") {
			if line != "" && !strings.HasPrefix(line, "|") {
				t.Fatalf("docs/performance.md holds %q where page.md has a table", line)
			}
		}
		if i > 0 && !strings.HasPrefix(between, "| benchmark |") {
			t.Fatalf("docs/performance.md holds no table where page.md has its marker %d", i)
		}
		rest = rest[at+len(part):]
	}
	if rest != "" {
		t.Fatalf("docs/performance.md goes on after page.md's end: %q", rest)
	}
}

// TestEndpointRows: the endpoint's process's CPU per fired trigger over
// HTTP is set against BenchmarkNext's weekday schedule of the same run,
// beside its goal of 500 times, and the handler's part of it without the
// network with no goal; without BenchmarkNext there is no row.
func TestEndpointRows(t *testing.T) {
	const lines = `BenchmarkNext/0_9_*_*_1-5-2  3000000  300 ns/op  0 B/op  0 allocs/op
BenchmarkFiredRequests/transaction-2  10000  100000 ns/op  40000 B/op  400 allocs/op
BenchmarkFiredRequests/fired-2  10000  120000 ns/op  45000 B/op  410 allocs/op
BenchmarkFiredOverHTTP/concurrency=32-2  3000  200000 ns/op  180000 endpoint-cpu-ns/fired
`
	results, err := parse(strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	goals, _ := tables(results)
	for _, want := range []string{
		"| `BenchmarkFiredRequests/fired` | 400× `BenchmarkNext/0_9_*_*_1-5` (120 µs over 300 ns), the endpoint's handler alone on one fired trigger's requests, without the network (a part of the figure over HTTP) | no goal |  |\n",
		"| `BenchmarkFiredOverHTTP/concurrency=32` | 600× `BenchmarkNext/0_9_*_*_1-5` (180 µs over 300 ns), the endpoint's process's CPU on one fired trigger's requests over HTTP | ≤ 500× | **no** |\n",
	} {
		if !strings.Contains(goals, want) {
			t.Errorf("no line\n%s in\n%s", want, goals)
		}
	}
	if strings.Contains(goals, "BenchmarkFiredRequests/transaction") {
		t.Errorf("a row for the transaction alone:\n%s", goals)
	}
	if goals, _ := tables(results[1:]); strings.Contains(goals, "Fired") {
		t.Errorf("a row without BenchmarkNext:\n%s", goals)
	}
}

// TestAnnounceRow: the session events function's events a second and its
// CPU per event, set against BenchmarkNext when it ran, with no goal.
func TestAnnounceRow(t *testing.T) {
	const lines = `BenchmarkNext/0_9_*_*_1-5-2  3000000  300 ns/op  0 B/op  0 allocs/op
BenchmarkAnnounce-2  20  37000000 ns/op  150000 cpu-ns/event  2700 events/s
`
	results, err := parse(strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	goals, _ := tables(results)
	want := "| `BenchmarkAnnounce` | 2700 events/s in one invocation of 100; 150 µs of CPU per event, 500× `BenchmarkNext/0_9_*_*_1-5` (300 ns) | no goal |  |\n"
	if !strings.Contains(goals, want) {
		t.Errorf("no line\n%s in\n%s", want, goals)
	}
	if goals, _ := tables(results[1:]); !strings.Contains(goals, "150 µs of CPU per event |") {
		t.Errorf("without BenchmarkNext:\n%s", goals)
	}
}

// TestStackBurstRows: a burst through the local stack is its time over
// its triggers × 5 ms, beside the goal of at most 0.10 with the bound in
// seconds, the bootstrap's initialisation and the handler's part, the
// warm burst, and the CPU of each process; it is not in the table of times
// and allocations.
func TestStackBurstRows(t *testing.T) {
	const lines = `BenchmarkStackBurst/triggers=300-2  1  420000000 ns/op  0.01 emulator-cpu-s  0.1 firing-cpu-s  25 handler-ms  30 init-ms  0.05 proxy-cpu-s  0.12 s/burst  0.06 stack-cpu-s  60 warm-handler-ms  0.09 warm-s/burst  0.06 warm-x-delay  0.08 x-delay  10000000 B/op  90000 allocs/op
BenchmarkStackBurst/triggers=2000-2  1  4500000000 ns/op  0.02 emulator-cpu-s  1.2 firing-cpu-s  1900 handler-ms  40 init-ms  0.7 proxy-cpu-s  2.5 s/burst  1.1 stack-cpu-s  1800 warm-handler-ms  1.9 warm-s/burst  0.19 warm-x-delay  0.25 x-delay  67000000 B/op  590000 allocs/op
`
	results, err := parse(strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	goals, figures := tables(results)
	for _, want := range []string{
		"| `BenchmarkStackBurst/triggers=300` | 0.08× the triggers × 5 ms (0.12 s over 1.5 s; of which the bootstrap's initialisation 30 ms, the firing's handler 25 ms; warm: 0.06×, 0.09 s, the handler 60 ms; CPU-s: the stack's process 0.06, the firing's bootstrap 0.1, its emulator 0.01, the proxy's 0.05) | ≤ 0.1× (0.15 s) | yes |\n",
		"| `BenchmarkStackBurst/triggers=2000` | 0.25× the triggers × 5 ms (2.5 s over 10 s; of which the bootstrap's initialisation 40 ms, the firing's handler 1900 ms; warm: 0.19×, 1.9 s, the handler 1800 ms; CPU-s: the stack's process 1.1, the firing's bootstrap 1.2, its emulator 0.02, the proxy's 0.7) | ≤ 0.1× (1 s) | **no** |\n",
	} {
		if !strings.Contains(goals, want) {
			t.Errorf("no line\n%s in\n%s", want, goals)
		}
	}
	if strings.Count(goals, "StackBurst") != 2 || strings.Contains(figures, "StackBurst") {
		t.Errorf("the goals table:\n%s\nthe table of times and allocations:\n%s", goals, figures)
	}
}

// TestRenderWorstRows: a webhook prompt rendered from a worst body is its
// time beside the goal of at most 50 ms, and is in the table of times and
// allocations too; BenchmarkRender, an ordinary body, has no goal.
func TestRenderWorstRows(t *testing.T) {
	const lines = `BenchmarkRender-2  300  4680000 ns/op  2156268 B/op  51 allocs/op
BenchmarkRenderWorst/depth=64-2  100  9500000 ns/op  5752967 B/op  101 allocs/op
BenchmarkRenderWorst/surrogates-2  10  51000000 ns/op  9209433 B/op  174846 allocs/op
`
	results, err := parse(strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	goals, figures := tables(results)
	for _, want := range []string{
		"| `BenchmarkRenderWorst/depth=64` | 9.5 ms to render the worst body of its kind at 256 KiB | ≤ 50 ms | yes |\n",
		"| `BenchmarkRenderWorst/surrogates` | 51 ms to render the worst body of its kind at 256 KiB | ≤ 50 ms | **no** |\n",
	} {
		if !strings.Contains(goals, want) {
			t.Errorf("no line\n%s in\n%s", want, goals)
		}
	}
	if strings.Contains(goals, "`BenchmarkRender`") || !strings.Contains(figures, "| `BenchmarkRenderWorst/depth=64` | 9.5 ms | 5752967 | 101 |\n") {
		t.Errorf("the goals table:\n%s\nthe table of times and allocations:\n%s", goals, figures)
	}
}
