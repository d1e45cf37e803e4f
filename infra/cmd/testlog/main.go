// Command testlog reads `go test -json` on its standard input and prints,
// for make test, a line for each package as it ends, with its time ("ok
// shared/start 9.1s", or FAIL), the output of each test that failed and
// of a package that failed outside its tests, and the build errors as
// they come: the results in the order the packages end, not in the order
// of their names, which keeps a slow package from holding back the lines
// of those after it. Lines that are not test2json's pass through. Its
// last line names the failed packages and their failed tests, so that the
// tail of a long log says what failed. It exits 1 when a package or a
// build failed.
package main

import (
	"bufio"
	"encoding/json/v2"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
)

func main() {
	if !run(os.Stdin, os.Stdout) {
		os.Exit(1)
	}
}

// event is one test2json event; the members it does not name are left
// out.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// pkg is what a package has said so far: each running test's output, and
// the package's own.
type pkg struct {
	tests  map[string]*strings.Builder
	own    strings.Builder
	failed []string
}

// run reads the events from r and writes the lines to w; it reports
// whether everything passed.
func run(r io.Reader, w io.Writer) bool {
	t := &tally{pkgs: map[string]*pkg{}, ok: true}
	in := bufio.NewReader(r)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var e event
			if json.Unmarshal(line, &e) != nil || e.Action == "" {
				_, _ = w.Write(line)
			} else {
				t.add(e, w)
			}
		}
		if err != nil {
			break
		}
	}
	fmt.Fprintf(w, "%d packages passed, %d failed, %d without tests\n", t.passed, t.failed, t.noTests)
	if len(t.failures) > 0 {
		fmt.Fprintf(w, "failed: %s\n", strings.Join(t.failures, "; "))
	}
	return t.ok && t.failed == 0
}

// tally is what the events said so far: the output of the packages still
// running, and the counts.
type tally struct {
	pkgs                    map[string]*pkg
	ok                      bool
	passed, failed, noTests int
	// failures are the failed packages, each with its failed tests.
	failures []string
}

// add takes one event: a test's output is kept until the test ends, and
// shown only when it failed; a package's line is written once it ends.
func (t *tally) add(e event, w io.Writer) {
	p := t.pkgs[e.Package]
	if p == nil {
		p = &pkg{tests: map[string]*strings.Builder{}}
		t.pkgs[e.Package] = p
	}
	switch {
	case e.Action == "build-output":
		fmt.Fprint(w, e.Output)
	case e.Action == "build-fail":
		t.ok = false
	case e.Action == "output" && e.Test != "":
		if p.tests[e.Test] == nil {
			p.tests[e.Test] = &strings.Builder{}
		}
		p.tests[e.Test].WriteString(e.Output)
	case e.Action == "output":
		p.own.WriteString(e.Output)
	case e.Test != "" && e.Action == "fail":
		if out := p.tests[e.Test]; out != nil {
			p.own.WriteString(out.String())
		}
		delete(p.tests, e.Test)
		p.failed = append(p.failed, e.Test)
	case e.Test != "" && (e.Action == "pass" || e.Action == "skip"):
		delete(p.tests, e.Test)
	case e.Action == "skip":
		t.noTests++
	case e.Action == "pass":
		t.passed++
		fmt.Fprintf(w, "ok    %-60s %6.1fs\n", short(e.Package), e.Elapsed)
	case e.Action == "fail":
		t.ok = false
		t.failed++
		// The tests still running when the package failed (a panic, a
		// timeout) say what they were doing.
		for _, name := range slices.Sorted(maps.Keys(p.tests)) {
			p.own.WriteString(p.tests[name].String())
			p.failed = append(p.failed, name)
		}
		fmt.Fprint(w, p.own.String())
		t.failures = append(t.failures, strings.TrimSpace(short(e.Package)+" "+strings.Join(p.failed, " ")))
		fmt.Fprintf(w, "FAIL  %-60s %6.1fs\n", short(e.Package), e.Elapsed)
	}
	if e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
		delete(t.pkgs, e.Package)
	}
}

// module is the import path of the module's packages.
const module = "github.com/cloud-agent/control-plane/"

// short is a package's path in the module: shared/start, not the whole
// import path.
func short(path string) string { return strings.TrimPrefix(path, module) }
