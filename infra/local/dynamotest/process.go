package dynamotest

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
	"github.com/cloud-agent/control-plane/infra/local/dynamo"
)

// serveEnv makes Main serve an embedded endpoint instead of running the
// tests: the test binary is then the endpoint's process (see Separate).
const serveEnv = "DYNAMOTEST_SERVE_ENDPOINT"

// gcPercent and memoryLimit are the endpoint's process's GOGC and
// GOMEMLIMIT: its heap may grow to five times what it holds before the
// collector runs, a quarter as often as by default, but the collector
// runs as often as it must to keep the process under 512 MiB. The
// endpoint is a development one whose heap is small (about 2.5 KB an
// item: about 100 MB after a burst of 10,000 triggers), and at 100 the
// collector took about a sixth of its CPU per request (see
// infra/local/dynamo's doc).
//
// procs is its GOMAXPROCS: one. Its writes are serialized by one lock
// anyway, and with more, requests that come a few at a time (as the
// firing's do, each after the network's delay) kept idle threads spinning
// for work: a burst's endpoint CPU was a fifth more, and the burst no
// faster.
const (
	gcPercent   = 400
	memoryLimit = 512 << 20
	procs       = 1
)

// serve serves an embedded endpoint until stdin closes (the parent went),
// after printing its URL.
func serve() {
	debug.SetGCPercent(gcPercent)
	debug.SetMemoryLimit(memoryLimit)
	runtime.GOMAXPROCS(procs)
	ep, err := dynamo.Start("127.0.0.1:0", dynamo.SweepEvery(24*time.Hour))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ep.URL)
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// Process is an embedded endpoint in a process of its own, as DynamoDB is
// to a Lambda function: a benchmark then measures the CPU each side
// spends, and neither's garbage collector works on the other's heap.
type Process struct {
	Backend
	cmd *exec.Cmd
}

// Separate starts an embedded endpoint in a process of its own (the test
// binary again, which Main turns into the endpoint); it stops with the
// test. The package's TestMain must call Main.
func Separate(t testing.TB) *Process {
	t.Helper()
	cmd, _, stdout := childproc.Self(t, serveEnv+"=1")
	url, err := stdout.ReadString('\n')
	if err != nil {
		t.Fatalf("the endpoint's process gave no URL: %v", err)
	}
	return &Process{Backend: Backend{Name: "embedded, own process", URL: strings.TrimSpace(url)}, cmd: cmd}
}

// CPU is the CPU time (user and system) the endpoint's process has spent,
// read from /proc (Linux only).
func (p *Process) CPU() (time.Duration, error) { return childproc.CPU(p.cmd) }
