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
	"context"
	"os/exec"
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
