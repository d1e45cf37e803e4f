// Package childproc starts the processes of the tests and of the local
// stack (moto_server, the Lambda runtime interface emulator, builds, the
// functions' bootstraps) tied to the process that starts them. Stopped
// (Kill, or the end of CommandContext's ctx), a command ends with all it
// started. When the process that started it dies (SIGKILL, a `go test
// -timeout` panic, SIGTERM), the command gets SIGTERM: moto_server and the
// emulator, with its function, end; a build (make, go build) ends but for
// the compiler and linker steps under way, which finish their package and
// exit; sh exits and leaves its command running. The tie is Linux's;
// elsewhere these are exec.Command and exec.CommandContext.
package childproc

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"testing"
)

// Command is exec.Command for a process tied to this one.
func Command(name string, arg ...string) *exec.Cmd {
	cmd := exec.Command(name, arg...)
	tie(cmd)
	return cmd
}

// CommandContext is exec.CommandContext for a process tied to this one:
// the end of ctx kills its process group (Kill), so that what it started
// stops with it.
func CommandContext(ctx context.Context, name string, arg ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, arg...)
	tie(cmd)
	cmd.Cancel = func() error { return Kill(cmd) }
	return cmd
}

// Self starts the test binary again, tied to this process, with the
// variable env (NAME=value) that makes it serve instead of test, its
// standard error this one's: it returns the command, a pipe to its
// standard input and a reader of its standard output. At the end of the
// test the pipe is closed (the child's sign to exit) and the child waited
// for.
func Self(t testing.TB, env string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := Command(exe)
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = in.Close()
		_ = cmd.Wait()
	})
	return cmd, in, bufio.NewReader(out)
}
