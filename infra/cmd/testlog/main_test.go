package main

import (
	"strings"
	"testing"
)

// TestRun: a line for each package as it ends, in that order; the
// output of a failed test only, and of the tests still running when
// their package failed; build errors as they come; other lines as they
// are; a last line naming the failed packages and tests; and the result is a failure when a package or a build failed.
func TestRun(t *testing.T) {
	const m = "github.com/cloud-agent/control-plane/"
	stream := strings.Join([]string{
		`{"Action":"start","Package":"` + m + `slow"}`,
		`{"Action":"run","Package":"` + m + `slow","Test":"TestPasses"}`,
		`{"Action":"output","Package":"` + m + `slow","Test":"TestPasses","Output":"=== RUN   TestPasses\n"}`,
		`{"Action":"output","Package":"` + m + `slow","Test":"TestPasses","Output":"    a_test.go:1: said while passing\n"}`,
		`{"Action":"pass","Package":"` + m + `slow","Test":"TestPasses","Elapsed":1}`,
		`go: downloading example.com/x v1.0.0`,
		`{"Action":"skip","Package":"` + m + `none","Elapsed":0}`,
		`{"Action":"pass","Package":"` + m + `fast","Elapsed":0.25}`,
		`{"Action":"output","Package":"` + m + `slow","Test":"TestFails","Output":"    a_test.go:2: the reason\n"}`,
		`{"Action":"fail","Package":"` + m + `slow","Test":"TestFails","Elapsed":2}`,
		`{"Action":"output","Package":"` + m + `slow","Test":"TestHangs","Output":"panic: test timed out\n"}`,
		`{"Action":"output","Package":"` + m + `slow","Output":"FAIL\n"}`,
		`{"Action":"fail","Package":"` + m + `slow","Elapsed":12.34}`,
	}, "\n") + "\n"
	var out strings.Builder
	if run(strings.NewReader(stream), &out) {
		t.Error("a failed package passed")
	}
	want := "go: downloading example.com/x v1.0.0\n" +
		"ok    fast" + strings.Repeat(" ", 56) + "    0.2s\n" +
		"    a_test.go:2: the reason\nFAIL\npanic: test timed out\n" +
		"FAIL  slow" + strings.Repeat(" ", 56) + "   12.3s\n" +
		"1 packages passed, 1 failed, 1 without tests\n" +
		"failed: slow TestFails TestHangs\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}

	out.Reset()
	build := `{"ImportPath":"` + m + `broken","Action":"build-output","Output":"broken/a.go:1:1: syntax error\n"}` + "\n" +
		`{"ImportPath":"` + m + `broken","Action":"build-fail"}` + "\n"
	if run(strings.NewReader(build), &out) || out.String() != "broken/a.go:1:1: syntax error\n0 packages passed, 0 failed, 0 without tests\n" {
		t.Errorf("a failed build: %q", out.String())
	}
	out.Reset()
	if !run(strings.NewReader(`{"Action":"pass","Package":"`+m+`fast","Elapsed":1}`), &out) {
		t.Errorf("a passed package failed: %q", out.String())
	}
}
