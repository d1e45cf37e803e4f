package faultproxy

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
)

// serveEnv makes Serve run a proxy to its value: the test binary is then
// the proxy's process (see Separate).
const serveEnv = "FAULTPROXY_SERVE_TARGET"

// Serve, in a process that Separate started, serves a proxy to the target
// it was given until its standard input closes (the parent went), then
// exits: it prints the proxy's URL, then reads a latency a line (as
// time.ParseDuration reads it, e.g. "5ms"), sets it and answers "ok". In
// any other process it returns at once. The package's TestMain calls it
// first.
func Serve() {
	target := os.Getenv(serveEnv)
	if target == "" {
		return
	}
	p := New(target)
	fmt.Println(p.URL())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		d, err := time.ParseDuration(in.Text())
		if err != nil {
			fmt.Fprintln(os.Stderr, "faultproxy:", err)
			os.Exit(1)
		}
		p.SetLatency(d)
		fmt.Println("ok")
	}
	p.Close()
	os.Exit(0)
}

// Process is a proxy in a process of its own: a benchmark of its client
// then measures the client's CPU without the proxy's. Of the faults it
// offers only the latency.
type Process struct {
	url string
	cmd *exec.Cmd

	mu  sync.Mutex // one latency line and its answer at a time
	in  io.WriteCloser
	out *bufio.Reader
}

// Separate starts a proxy to target in a process of its own (the test
// binary again, which Serve turns into the proxy), tied to this one
// (childproc); it stops with the test.
func Separate(t testing.TB, target string) *Process {
	t.Helper()
	cmd, in, out := childproc.Self(t, serveEnv+"="+target)
	p := &Process{cmd: cmd, in: in, out: out}
	var err error
	if p.url, err = p.line(); err != nil {
		t.Fatalf("the proxy's process gave no URL: %v", err)
	}
	return p
}

// CPU is the CPU time (user and system) the proxy's process has spent,
// read from /proc (Linux only).
func (p *Process) CPU() (time.Duration, error) { return childproc.CPU(p.cmd) }

// URL is the proxy's base URL, to use as the client's endpoint.
func (p *Process) URL() string { return p.url }

// SetLatency makes every request that is forwarded from now on wait d
// first.
func (p *Process) SetLatency(d time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := fmt.Fprintln(p.in, d); err != nil {
		return err
	}
	answer, err := p.line()
	if err == nil && answer != "ok" {
		err = fmt.Errorf("faultproxy: the proxy's process answered %q", answer)
	}
	return err
}

// line is the next line the proxy's process wrote.
func (p *Process) line() (string, error) {
	s, err := p.out.ReadString('\n')
	return strings.TrimSpace(s), err
}
