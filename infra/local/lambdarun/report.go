package lambdarun

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// reportWriter passes an emulator's output on to logs a line at a time,
// with each REPORT line's "Max Memory Used" the function's real peak:
// the emulator writes the memory size there. The peak is the bootstrap's
// VmHWM (Linux's high-water mark of its resident memory, as Lambda
// reports it, over the execution environment's life); when it cannot be
// read, the field is left out.
type reportWriter struct {
	logs io.Writer
	peak func() (mb int, ok bool)
	mu   sync.Mutex
	part []byte // a line not ended yet
}

// maxMemoryUsed is the emulator's field, with the tab that ends it.
var maxMemoryUsed = regexp.MustCompile(`Max Memory Used: [0-9]+ MB\t?`)

func (w *reportWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.part = append(w.part, p...)
	end := bytes.LastIndexByte(w.part, '\n')
	if end < 0 {
		return len(p), nil
	}
	lines := w.part[:end+1]
	var out []byte
	for len(lines) > 0 {
		i := bytes.IndexByte(lines, '\n')
		out = append(out, w.line(lines[:i+1])...)
		lines = lines[i+1:]
	}
	w.part = append(w.part[:0], w.part[end+1:]...)
	if _, err := w.logs.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// line is one line as logs gets it.
func (w *reportWriter) line(l []byte) []byte {
	if !bytes.HasPrefix(l, []byte("REPORT RequestId:")) {
		return l
	}
	field := ""
	if mb, ok := w.peak(); ok {
		field = fmt.Sprintf("Max Memory Used: %d MB\t", mb)
	}
	return maxMemoryUsed.ReplaceAll(l, []byte(field))
}

// flush writes what is left of a line not ended.
func (w *reportWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.part) > 0 {
		_, _ = w.logs.Write(w.line(w.part))
		w.part = nil
	}
}

// peakOf is the VmHWM, in MB rounded up, of the child of process parent
// that runs the executable bootstrap.
func peakOf(parent int, bootstrap string) (int, bool) {
	// Each thread's children: the emulator's Go runtime starts the
	// bootstrap from any of its threads.
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", parent))
	var children []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		children = append(children, strings.Fields(string(b))...)
	}
	for _, pid := range children {
		if exe, err := os.Readlink("/proc/" + pid + "/exe"); err != nil || exe != bootstrap {
			continue
		}
		if kb, ok := vmHWM("/proc/" + pid + "/status"); ok {
			return (kb + 1023) / 1024, true
		}
	}
	return 0, false
}

// vmHWM is the VmHWM line of a /proc/<pid>/status file, in kB.
func vmHWM(status string) (int, bool) {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb, err == nil
		}
	}
	return 0, false
}
