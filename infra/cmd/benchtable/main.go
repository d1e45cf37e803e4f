// Command benchtable reads `go test -bench` output on its standard input
// and prints the two Markdown tables of docs/performance.md: the goals
// table (every figure that has a goal or a floor, as a ratio to its floor
// where it has one, beside its goal and whether it holds) and the table of
// times and allocations of the benchmarks timed over many iterations.
// With -page FILE it also writes the whole of docs/performance.md, its
// text (page.md) with the run's tables, to FILE. `make bench` pipes the
// benchmarks through it.
package main

import (
	"bufio"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// result is one benchmark line: its name and its figures by unit.
type result struct {
	name    string
	procs   int // GOMAXPROCS, from the name's suffix
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
			res.figures[f[i+1]] = v
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

// format writes a figure with three significant digits, whole numbers
// from 1,000 on.
func format(v float64) string {
	if v >= 1000 || v <= -1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// page is docs/performance.md's text; each of the marker lines is where
// its table goes.
//
//go:embed page.md
var page string

const (
	goalsMarker   = "<!-- the goals table -->"
	figuresMarker = "<!-- the table of times and allocations -->"
)

// tables are the goals table and the table of times and allocations.
func tables(results []result) (goals, figures string) {
	var g, f strings.Builder
	writeGoals(&g, goalRows(results))
	writeFigures(&f, timed(results))
	return g.String(), f.String()
}

// render is docs/performance.md with the results' tables.
func render(results []result) (string, error) {
	if strings.Count(page, goalsMarker+"\n") != 1 || strings.Count(page, figuresMarker+"\n") != 1 {
		return "", errors.New("page.md does not hold each table's marker line once")
	}
	goals, figures := tables(results)
	return strings.NewReplacer(goalsMarker+"\n", goals, figuresMarker+"\n", figures).Replace(page), nil
}

func main() {
	pageFile := flag.String("page", "", "also write docs/performance.md with this run's tables to `file`")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *pageFile); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer, pageFile string) error {
	results, err := parse(in)
	if err != nil {
		return err
	}
	if len(results) == 0 {
		return errors.New("no benchmark lines on the standard input")
	}
	if pageFile != "" {
		doc, err := render(results)
		if err != nil {
			return err
		}
		if err := os.WriteFile(pageFile, []byte(doc), 0o644); err != nil {
			return err
		}
	}
	goals, figures := tables(results)
	_, err = fmt.Fprint(out, goals, "\n", figures)
	return err
}
