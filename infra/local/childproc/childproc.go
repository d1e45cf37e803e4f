// Package childproc starts the processes of the tests and of the local
// stack (moto_server, the Lambda runtime interface emulator, builds, the
// functions' bootstraps) tied to the process that starts them, so that none
// outlives it: not when it stops them, and not when it dies (SIGKILL, a
// `go test -timeout` panic, SIGTERM). The tie is Linux's; elsewhere these
// are exec.Command and exec.CommandContext.
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
