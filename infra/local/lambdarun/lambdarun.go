// Package lambdarun builds the functions' bootstraps as `sam build` does
// (the Makefile's build-<LogicalId> targets) and runs each under the
// Lambda runtime interface emulator, as `sam local invoke` does, with the
// environment template.yaml gives it. For development and tests only.
package lambdarun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
	"github.com/cloud-agent/control-plane/infra/template"
)

// Invoker runs one invocation of a function, named by its logical id,
// with an event, and returns the function's result.
type Invoker func(ctx context.Context, functionID string, event []byte) ([]byte, error)

// Build builds the bootstrap of each function as `sam build` would,
// through the Makefile's build-<LogicalId> target, for the machine's own
// architecture, into dir/<LogicalId>/bootstrap, one after the other. repo
// is the folder of the Makefile. A bootstrap built before from the same
// sources (sourceKey) is taken from the user's cache folder instead.
// Progress gets a line for each build, such as "building TriggersFunction
// (3/4)… done in 12.3s", or "… cached" (io.Discard for none): on empty
// caches the first build takes a minute or more.
func Build(ctx context.Context, progress io.Writer, repo, dir string, ids ...string) error {
	return BuildFor(ctx, progress, runtime.GOARCH, repo, dir, ids...)
}

// BuildFor is Build for the architecture goarch (arm64
// is what Lambda runs).
func BuildFor(ctx context.Context, progress io.Writer, goarch, repo, dir string, ids ...string) error {
	root := cacheRoot()
	var key string
	if root != "" {
		var err error
		if key, err = sourceKey(ctx, repo, goarch); err != nil {
			return err
		}
	}
	for i, id := range ids {
		build := func(out string) error {
			cmd := childproc.CommandContext(ctx, "make", "--no-print-directory", "build-"+id,
				"ARTIFACTS_DIR="+out, "LAMBDA_GOARCH="+goarch)
			cmd.Dir = repo
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("building %s: %w\n%s", id, err, out)
			}
			return nil
		}
		err := step(progress, fmt.Sprintf("building %s (%d/%d)", id, i+1, len(ids)), func() (bool, error) {
			if root == "" {
				return false, build(filepath.Join(dir, id))
			}
			return cached(root, key, id, filepath.Join(dir, id), build)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// EmulatorPath is the Lambda runtime interface emulator, built from the
// version go.mod pins (`go tool aws-lambda-rie`) when the build cache
// lacks it. repo is the module's folder. Progress gets a line for the
// build, as for Build's.
func EmulatorPath(ctx context.Context, progress io.Writer, repo string) (string, error) {
	var path string
	err := step(progress, "building the Lambda runtime interface emulator", func() (bool, error) {
		cmd := childproc.CommandContext(ctx, "go", "tool", "-n", "aws-lambda-rie")
		cmd.Dir = repo
		out, err := cmd.Output()
		if err != nil {
			return false, fmt.Errorf("finding the runtime interface emulator: %w", err)
		}
		path = strings.TrimSpace(string(out))
		return false, nil
	})
	return path, err
}

// step runs f, saying on w what it does, then how long it took, that
// what it makes was cached (f reports it), or that it failed: one line.
func step(w io.Writer, what string, f func() (cached bool, err error)) error {
	fmt.Fprintf(w, "%s… ", what)
	start := time.Now()
	hit, err := f()
	switch {
	case err != nil:
		fmt.Fprintln(w, "failed")
		return err
	case hit:
		fmt.Fprintln(w, "cached")
	default:
		fmt.Fprintf(w, "done in %v\n", time.Since(start).Round(100*time.Millisecond))
	}
	return nil
}

// Lambda is one function's bootstrap running under the runtime interface
// emulator, as `sam local invoke` runs it. The emulator takes one
// invocation at a time, so Invoke waits its turn, and an invocation runs to
// its end (or the function's timeout) even when its caller gives up.
type Lambda struct {
	id      string
	url     string
	cmd     *exec.Cmd
	exited  chan struct{}
	timeout time.Duration
	mu      sync.Mutex
}

// EmulatorLog is how much of its own the emulator writes to the logs,
// beside its function's lines and its START, END and REPORT lines.
type EmulatorLog string

const (
	// EmulatorWarnings: its warnings and errors only.
	EmulatorWarnings EmulatorLog = "warn"
	// EmulatorInfo: its INFO lines too, "[INFO] (rapid) …", each phase of
	// an initialisation and of an invocation (INIT REPORT, say).
	EmulatorInfo EmulatorLog = "info"
)

// errExitedAtStart is an emulator that exited before it listened: the port
// found free was taken before it could bind it.
var errExitedAtStart = errors.New("the emulator exited at start")

// Start runs bootstrap under the emulator with the environment env
// ("NAME=value") and the function's timeout, on free loopback ports. Its
// output goes to logs, its own lines as level says, a line at a time, its REPORT lines with the
// function's real peak of memory (reportWriter). The emulator is tied to
// this process (see childproc): it gets SIGTERM when this process dies,
// as from Close, and then kills the function, which it runs in a process
// group of its own, and exits. Logs other than io.Discard reach this
// process through a pipe: should this process die, the emulator's next write to
// it kills the emulator (SIGPIPE) before it stops its function, which
// then runs until it next calls the runtime API (a bootstrap of
// aws-lambda-go exits there). A port found free may be taken (by any
// connection's ephemeral port) before the emulator binds it: then it
// starts again, on other ports, up to 3 times.
func Start(emulator, id, bootstrap string, env []string, timeout time.Duration, logs io.Writer, level EmulatorLog) (*Lambda, error) {
	var err error
	for range 3 {
		var l *Lambda
		if l, err = start(emulator, id, bootstrap, env, timeout, logs, level); !errors.Is(err, errExitedAtStart) {
			return l, err
		}
	}
	return nil, err
}

func start(emulator, id, bootstrap string, env []string, timeout time.Duration, logs io.Writer, level EmulatorLog) (*Lambda, error) {
	invokeAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	runtimeAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := childproc.Command(emulator, "--log-level", string(level),
		"--runtime-interface-emulator-address", invokeAddr, "--runtime-api-address", runtimeAddr, bootstrap)
	cmd.Env = env
	var report *reportWriter
	if logs != io.Discard {
		exe, err := filepath.Abs(bootstrap)
		if err != nil {
			return nil, err
		}
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		report = &reportWriter{logs: logs, peak: func() (int, bool) { return peakOf(cmd.Process.Pid, exe) }}
		cmd.Stdout, cmd.Stderr = report, report
	}
	// Once the emulator has exited, its output is copied for 2 s at most:
	// a function still alive may hold the pipe open.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", id, err)
	}
	l := &Lambda{id: id, url: "http://" + invokeAddr + "/2015-03-31/functions/function/invocations", cmd: cmd,
		exited: make(chan struct{}), timeout: timeout}
	go func() {
		_ = cmd.Wait()
		if report != nil {
			report.flush()
		}
		close(l.exited)
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case <-l.exited:
			return nil, fmt.Errorf("%s: %w (is %s taken?)", id, errExitedAtStart, invokeAddr)
		default:
		}
		if c, err := net.Dial("tcp", invokeAddr); err == nil {
			c.Close()
			return l, nil
		}
		if time.Now().After(deadline) {
			l.Close()
			return nil, fmt.Errorf("%s: the emulator did not listen on %s", id, invokeAddr)
		}
	}
}

// functionError is an invocation whose function returned an error.
type functionError struct{ payload string }

func (e *functionError) Error() string { return "the function returned an error: " + e.payload }

// Invoke runs one invocation with the event and returns the function's
// result. The invocation is not cancelled with ctx: the emulator cannot
// take another one until this one ends, so it is bounded by the function's
// timeout instead.
func (l *Lambda) Invoke(ctx context.Context, event []byte) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.exited:
		return nil, fmt.Errorf("%s: the emulator has exited", l.id)
	default:
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout+5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(event))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("invoking %s: %w", l.id, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Amz-Function-Error") != "" || isErrorPayload(out) {
		return nil, &functionError{payload: string(out)}
	}
	return out, nil
}

// isErrorPayload reports whether a result is the runtime's error shape,
// {"errorMessage":…,"errorType":…}.
func isErrorPayload(out []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(out), []byte(`{"errorMessage"`)) || bytes.HasPrefix(bytes.TrimSpace(out), []byte(`{"errorType"`))
}

// Close stops the emulator and its function: SIGTERM, on which the
// emulator kills the function and exits; an emulator still there 5
// seconds later is killed, with its function (childproc.Kill).
func (l *Lambda) Close() {
	_ = l.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-l.exited:
	case <-time.After(5 * time.Second):
		_ = childproc.Kill(l.cmd)
		<-l.exited
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Environment is a function's environment for the local stack: the
// template's variables, its timeout and memory as the emulator reads them,
// endpoints for DynamoDB and SSM, a region and local credentials, the
// PATH, and then more (NAME=value: the KMS stand-in's endpoint and key
// ids), which win over the template's (os/exec keeps the last of a name).
func Environment(fn template.Function, dynamoURL, ssmURL string, more ...string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=local",
		"AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_DYNAMODB=" + dynamoURL,
		"AWS_ENDPOINT_URL_SSM=" + ssmURL,
		"AWS_LAMBDA_FUNCTION_NAME=" + fn.LogicalID,
		"AWS_LAMBDA_FUNCTION_TIMEOUT=" + strconv.Itoa(int(fn.Timeout.Seconds())),
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=" + strconv.Itoa(fn.MemoryMB),
	}
	for k, v := range fn.Environment {
		env = append(env, k+"="+v)
	}
	return append(env, more...)
}
