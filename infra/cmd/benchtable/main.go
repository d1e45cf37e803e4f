// Command benchtable reads `go test -bench` output on its standard input and
// prints one Markdown table: every benchmark's figures, and beside each
// figure that has one its goal or floor and whether it holds. `make bench`
// pipes the benchmarks through it.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// goal is a bound on one figure of the benchmarks whose names match.
type goal struct {
	bench *regexp.Regexp
	unit  string
	most  bool // the figure must be at most limit; else at least
	limit float64
	what  string
}

var goals = []goal{
	{regexp.MustCompile(`^BenchmarkBurst/`), "extra-requests", true, 16, "one request per fired trigger, and the 16 shard queries"},
	{regexp.MustCompile(`^BenchmarkBurst/triggers=2000/concurrency=32$`), "s/burst", true, 1.5, "2,000 fired in ≤ 1.5 s"},
	{regexp.MustCompile(`^BenchmarkBurst/triggers=10000/concurrency=32$`), "s/burst", true, 6, "10,000 fired in ≤ 6 s"},
	{regexp.MustCompile(`^BenchmarkAgainstFloor/(start|replay|lookup)$`), "x-floor", false, 0.7, "≥ 0.7 × its floor"},
	{regexp.MustCompile(`^BenchmarkColdStart/.+/(no-io|settings)$`), "x-hello", true, 1.5, "cold start ≤ 1.5 × hello world"},
	{regexp.MustCompile(`^BenchmarkSize/`), "MiB", true, 12, "stripped arm64 bootstrap ≤ 12 MiB"},
}

// result is one benchmark line: its name and its figures by unit, in the
// order printed.
type result struct {
	name    string
	procs   int // GOMAXPROCS, from the name's suffix
	units   []string
	figures map[string]float64
}

var procs = regexp.MustCompile(`-\d+$`)

// parse reads the benchmark lines of go test's output.
func parse(r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		res := result{name: procs.ReplaceAllString(f[0], ""), procs: 1, figures: map[string]float64{}}
		if m := procs.FindString(f[0]); m != "" {
			res.procs, _ = strconv.Atoi(m[1:])
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: figure %q: %w", f[0], f[i], err)
			}
			res.units = append(res.units, f[i+1])
			res.figures[f[i+1]] = v
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

// row is one line of the table.
type row struct{ bench, figures, goal, holds string }

func table(results []result) []row {
	byName := map[string]result{}
	for _, r := range results {
		byName[r.name] = r
	}
	var rows []row
	for _, r := range results {
		var figs []string
		for _, u := range r.units {
			figs = append(figs, format(r.figures[u])+" "+u)
		}
		base := row{bench: r.name, figures: strings.Join(figs, ", ")}
		var checks []row
		for _, g := range goals {
			v, ok := r.figures[g.unit]
			if !g.bench.MatchString(r.name) || !ok {
				continue
			}
			checks = append(checks, row{figures: format(v) + " " + g.unit, goal: g.what, holds: verdict(g.most && v <= g.limit || !g.most && v >= g.limit)})
			// A burst shares the machine's cores with the embedded
			// endpoint, whose CPU DynamoDB's would not take from the
			// function: what the burst's own side spends over the
			// cores is the least it could take without it.
			if cpu, ok := r.figures["cpu-s"]; ok && g.unit == "s/burst" {
				own := cpu / float64(r.procs)
				checks = append(checks, row{
					figures: fmt.Sprintf("%s s: %s CPU-s of the firing's side over %d cores (the endpoint's process: %s CPU-s)", format(own), format(cpu), r.procs, format(r.figures["endpoint-cpu-s"])),
					goal:    g.what + ", the endpoint's CPU aside", holds: verdict(own <= g.limit),
				})
			}
		}
		// A burst against its floor, the latency alone: no endpoint and no
		// code makes it faster.
		if floor, ok := r.figures["floor-s"]; ok {
			checks = append(checks, row{
				figures: format(r.figures["s/burst"]/floor) + "× its floor",
				goal:    "floor " + format(floor) + " s (the burst's size over the concurrency, times 5 ms)",
			})
		}
		// The burst at 32 against the same burst at 1.
		if one, ok := byName[strings.TrimSuffix(r.name, "32")+"1"]; ok && strings.HasSuffix(r.name, "/concurrency=32") {
			speedup := r.figures["triggers/s"] / one.figures["triggers/s"]
			checks = append(checks, row{figures: format(speedup) + "× the rate at concurrency 1", goal: "≥ 8×", holds: verdict(speedup >= 8)})
		}
		// A request's cost on a large table against a small one's.
		if small, ok := byName[strings.TrimSuffix(r.name, "items=100000")+"items=200"]; ok && strings.HasSuffix(r.name, "/items=100000") {
			ratio := r.figures["ns/op"] / small.figures["ns/op"]
			checks = append(checks, row{figures: format(ratio) + "× its cost at 200 items", goal: "≤ 2×", holds: verdict(ratio <= 2)})
		}
		if len(checks) == 0 {
			rows = append(rows, base)
			continue
		}
		rows = append(rows, base)
		for _, c := range checks {
			c.bench = "↳"
			rows = append(rows, c)
		}
	}
	return rows
}

func verdict(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// format writes a figure with three significant digits, whole numbers
// from 1,000 on.
func format(v float64) string {
	if v >= 1000 || v <= -1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func main() {
	results, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	if len(results) == 0 {
		fmt.Fprintln(os.Stderr, "benchtable: no benchmark lines on the standard input")
		os.Exit(1)
	}
	fmt.Println("| benchmark | figures | goal or floor | holds |")
	fmt.Println("|---|---|---|---|")
	for _, r := range table(results) {
		fmt.Printf("| %s | %s | %s | %s |\n", r.bench, r.figures, r.goal, r.holds)
	}
}
