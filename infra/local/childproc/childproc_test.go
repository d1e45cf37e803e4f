//go:build linux

package childproc_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
	"github.com/cloud-agent/control-plane/infra/local/lambdarun"
	"github.com/cloud-agent/control-plane/infra/local/motoserver"
)

const (
	// helpersEnv lists, in a child of TestNoOrphan, the helpers it starts
	// before its tests run: sleeper, emulator, moto.
	helpersEnv = "CHILDPROC_TEST_HELPERS"
	// sleeperEnv makes the test binary the sleeper (TestSleeper).
	sleeperEnv = "CHILDPROC_TEST_SLEEPER"
	// dirEnv is a folder for the emulator's function.
	dirEnv = "CHILDPROC_TEST_DIR"
)

// TestMain, in a child of TestNoOrphan, starts its helpers before the
// tests run, so that the -test.timeout clock starts once they are up. For
// each it prints "<helper> addr <host:port>", the port it listens on, and
// "<helper> pid <pid>" for each process it added under this one; then
// "ready", or "error <cause>".
func TestMain(m *testing.M) {
	if helpers := os.Getenv(helpersEnv); helpers != "" {
		var seen []int
		for _, h := range strings.Split(helpers, ",") {
			addr, err := startHelper(h)
			if err != nil {
				fmt.Printf("error %s: %v\n", h, err)
				os.Exit(1)
			}
			fmt.Println(h, "addr", addr)
			for _, pid := range descendants() {
				if !slices.Contains(seen, pid) {
					seen = append(seen, pid)
					fmt.Println(h, "pid", pid)
				}
			}
		}
		fmt.Println("ready")
	}
	os.Exit(m.Run())
}

// startHelper starts the helper and returns the address it listens on.
func startHelper(helper string) (string, error) {
	switch helper {
	case "moto":
		url, err := motoserver.Start()
		return strings.TrimPrefix(url, "http://"), err
	case "emulator":
		return startEmulator(os.Getenv(dirEnv))
	}
	// The sleeper.
	cmd := childproc.Command(os.Args[0], "-test.run=^TestSleeper$")
	cmd.Env = append(os.Environ(), helpersEnv+"=", sleeperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	return strings.TrimSpace(line), err
}

// startEmulator runs, under the emulator, a function that never answers
// and outlives the emulator unless it is killed, and returns the address
// of the emulator's runtime API, which the function writes to a file in
// dir. The emulator starts the function at the first invocation.
func startEmulator(dir string) (string, error) {
	emulator, err := lambdarun.EmulatorPath(context.Background(), io.Discard, "../../..")
	if err != nil {
		return "", err
	}
	bootstrap, addrFile := filepath.Join(dir, "bootstrap"), filepath.Join(dir, "runtime-api")
	script := "#!/bin/sh\necho \"$AWS_LAMBDA_RUNTIME_API\" > '" + addrFile + "'\nexec sleep 60\n"
	if err := os.WriteFile(bootstrap, []byte(script), 0o755); err != nil {
		return "", err
	}
	l, err := lambdarun.Start(emulator, "Sleeper", bootstrap, []string{"PATH=" + os.Getenv("PATH")}, time.Minute, io.Discard, lambdarun.EmulatorWarnings)
	if err != nil {
		return "", err
	}
	go func() { _, _ = l.Invoke(context.Background(), []byte("{}")) }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if addr, err := os.ReadFile(addrFile); err == nil && bytes.HasSuffix(addr, []byte("\n")) {
			return strings.TrimSpace(string(addr)), nil
		}
	}
	return "", errors.New("the function did not start within 10s")
}

// TestWait is what a child of TestNoOrphan runs: it waits to be killed,
// a minute at most.
func TestWait(t *testing.T) {
	if os.Getenv(helpersEnv) == "" {
		t.Skip("run by TestNoOrphan in its children")
	}
	time.Sleep(time.Minute)
}

// TestSleeper is the sleeper, a long-lived helper process that is always
// there: it prints the address of a loopback port it listens on and waits
// a minute at most.
func TestSleeper(t *testing.T) {
	if os.Getenv(sleeperEnv) == "" {
		t.Skip("run by TestNoOrphan as a helper of its children")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fmt.Println(ln.Addr())
	time.Sleep(time.Minute)
}

// TestNoOrphan: the helper processes a test binary starts (the sleeper;
// the emulator with a function that never answers; moto_server when it is
// on the PATH) do not outlive the binary, whether it is killed (SIGKILL),
// terminated (SIGTERM) or panics at its -test.timeout: within 10 s every
// process each added is gone. One child binary at a time, so that each
// starts its helpers (moto_server is slow to) on a machine no busier than
// its other tests make it.
func TestNoOrphan(t *testing.T) {
	helpers := []string{"sleeper", "emulator"}
	_, noMoto := exec.LookPath("moto_server")
	if noMoto == nil {
		helpers = append(helpers, "moto")
	}
	ends := []struct {
		name   string
		args   []string
		signal os.Signal
		exit   string
	}{
		{"SIGKILL", nil, syscall.SIGKILL, "signal: killed"},
		{"SIGTERM", nil, syscall.SIGTERM, "signal: terminated"},
		{"timeout", []string{"-test.timeout=1s"}, nil, "exit status 2"},
	}
	for _, end := range ends {
		t.Run(end.name, func(t *testing.T) {
			c := startChild(helpers, t.TempDir(), end.args)
			if c.err != nil {
				t.Fatalf("the child did not start its helpers: %v\n%s", c.err, c.ended())
			}
			if end.signal != nil {
				if err := c.cmd.Process.Signal(end.signal); err != nil {
					t.Fatal(err)
				}
			}
			_, _ = io.Copy(io.Discard, c.stdout)
			if err := c.cmd.Wait(); err == nil || err.Error() != end.exit || end.signal == nil && !strings.Contains(c.stderr.String(), "panic: test timed out after 1s") {
				t.Fatalf("the child ended with %v, want %s\n%s", err, end.exit, c.stderr.String())
			}
			for _, h := range []string{"sleeper", "emulator", "moto"} {
				t.Run(h, func(t *testing.T) {
					if h == "moto" && noMoto != nil {
						t.Skipf("moto_server is not on the PATH (%v): not checked that it dies with its test binary", noMoto)
					}
					if len(c.procs[h]) == 0 {
						t.Fatal("the child added no process for it")
					}
					if left := waitGone(c.procs[h], c.addrs[h]); len(left) > 0 {
						t.Errorf("10 s after the child's end: %s", strings.Join(left, ", "))
					}
				})
			}
		})
	}
}

// TestKill: Kill ends a command with the processes under it, in its
// process group and in groups of their own, and signals nothing once Wait
// has returned.
func TestKill(t *testing.T) {
	cmd := childproc.Command("sh", "-c", "sleep 60 & echo $!; setsid sleep 60 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	procs, pids := map[int]proc{}, []int{}
	r := bufio.NewReader(out)
	for range 2 {
		line, err := r.ReadString('\n')
		pid, _ := strconv.Atoi(strings.TrimSpace(line))
		p, ok := stat(pid)
		if err != nil || !ok {
			t.Fatalf("reading a pid: %q, %v", line, err)
		}
		procs[pid], pids = p, append(pids, pid)
	}
	// The second sleep leads a group of its own once setsid has run.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if p, _ := stat(pids[1]); p.pgid == pids[1] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("setsid did not run within 10 s")
		}
	}
	if err := childproc.Kill(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || err.Error() != "signal: killed" {
		t.Fatalf("the command ended with %v, want signal: killed", err)
	}
	if left := waitGone(procs, ""); len(left) > 0 {
		t.Errorf("10 s after the kill: %s", strings.Join(left, ", "))
	}
	if err := childproc.Kill(cmd); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("Kill after Wait: %v, want %v", err, os.ErrProcessDone)
	}
}

// child is a child test binary of TestNoOrphan, ready (err is nil) with
// its helpers' addresses and processes.
type child struct {
	cmd    *exec.Cmd
	stdout io.Reader
	stderr bytes.Buffer
	addrs  map[string]string
	procs  map[string]map[int]proc
	err    error
}

// ended is what the child wrote to its standard error, once it is killed
// and waited for, so that nothing writes it still.
func (c *child) ended() string {
	if c.cmd.Process != nil {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	}
	return c.stderr.String()
}

// startChild starts a child test binary that starts the helpers, with
// the extra arguments, and reads its report; a child not ready within two
// minutes (a loaded machine builds and starts moto slowly) is killed.
func startChild(helpers []string, dir string, args []string) *child {
	c := &child{addrs: map[string]string{}, procs: map[string]map[int]proc{}}
	c.cmd = childproc.Command(os.Args[0], append([]string{"-test.run=^TestWait$"}, args...)...)
	c.cmd.Env = append(os.Environ(), helpersEnv+"="+strings.Join(helpers, ","), dirEnv+"="+dir)
	c.cmd.Stderr = &c.stderr
	c.cmd.WaitDelay = 10 * time.Second
	if c.stdout, c.err = c.cmd.StdoutPipe(); c.err != nil {
		return c
	}
	if c.err = c.cmd.Start(); c.err != nil {
		return c
	}
	timer := time.AfterFunc(2*time.Minute, func() { _ = c.cmd.Process.Kill() })
	defer timer.Stop()
	for sc := bufio.NewScanner(c.stdout); sc.Scan(); {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 1 && f[0] == "ready":
			return c
		case len(f) == 3 && f[1] == "addr":
			c.addrs[f[0]] = f[2]
		case len(f) == 3 && f[1] == "pid":
			pid, _ := strconv.Atoi(f[2])
			if c.procs[f[0]] == nil {
				c.procs[f[0]] = map[int]proc{}
			}
			// A process that is gone already is no orphan.
			if p, ok := stat(pid); ok {
				c.procs[f[0]][pid] = p
			}
		default:
			c.err = errors.New(sc.Text())
			return c
		}
	}
	c.err = errors.New("the child ended before it was ready")
	return c
}

// waitGone waits, 10 s at most, until none of the processes runs, and
// returns what is left: each process that still runs and, as a hint, addr
// if it accepts connections then. A process is gone once its pid is no
// one's or another's (of another start time), or it is a zombie whose
// threads have all exited (its parent gone, nothing may ever reap it).
func waitGone(procs map[int]proc, addr string) []string {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var left []string
		for pid, p := range procs {
			if runs(pid, p) {
				left = append(left, fmt.Sprintf("process %d (%s) runs", pid, p.name))
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				conn.Close()
				left = append(left, addr+" accepts connections")
			}
			return left
		}
	}
}

// runs reports whether the process p, found at pid, still runs.
func runs(pid int, p proc) bool {
	q, ok := stat(pid)
	if !ok || q.start != p.start {
		return false
	}
	if q.state != "Z" {
		return true
	}
	threads, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return len(threads) > 1
}

// proc is a process as /proc/<pid>/stat describes it.
type proc struct {
	name, state, start string
	ppid, pgid         int
}

// stat reads /proc/<pid>/stat; ok is false when there is no such process.
func stat(pid int) (p proc, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if err != nil || open < 0 || end < open {
		return p, false
	}
	// After the name: the state (field 3 of proc_pid_stat(5)), the
	// parent (4), …, the start time (22).
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 20 {
		return p, false
	}
	p.name, p.state, p.start = string(b[open+1:end]), f[0], f[19]
	p.ppid, _ = strconv.Atoi(f[1])
	p.pgid, _ = strconv.Atoi(f[2])
	return p, true
}

// descendants lists the processes under this one.
func descendants() []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if p, ok := stat(pid); ok {
				children[p.ppid] = append(children[p.ppid], pid)
			}
		}
	}
	all := children[os.Getpid()]
	for i := 0; i < len(all); i++ {
		all = append(all, children[all[i]]...)
	}
	return all
}
