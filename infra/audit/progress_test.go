package audit

import (
	"bytes"
	"runtime/pprof"
	"strings"
	"testing"
)

// TestProgressRunsNoGoroutine: the progress bar renders only when the scan
// adds to it. A bar with a goroutine of its own (progressbar's spinner
// ticker) reads its state while the scan's Add writes it, a data race.
func TestProgressRunsNoGoroutine(t *testing.T) {
	var out bytes.Buffer
	bar := newProgress(&out, "T")
	for range 3 {
		if err := bar.Add(10); err != nil {
			t.Fatal(err)
		}
	}
	var stacks strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&stacks, 1); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stacks.String(), "schollz/progressbar") {
		t.Errorf("the progress bar runs a goroutine:\n%s", stacks.String())
	}
	if err := bar.Finish(); err != nil || !strings.Contains(out.String(), "scanning T") {
		t.Errorf("the bar: %v %q", err, out.String())
	}
}
