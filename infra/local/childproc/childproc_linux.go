//go:build linux

package childproc

import (
	"os"
	"os/exec"
	"syscall"
)

// tie makes cmd the leader of a process group of its own, which Kill ends,
// and has the kernel send it SIGTERM when its parent dies
// (PR_SET_PDEATHSIG). SIGTERM rather than SIGKILL: the emulator runs its
// function in a group of its own and kills it on SIGTERM, make stops its
// jobs; every command started here ends on it.
//
// The kernel sends the signal when the OS thread that started cmd exits,
// not the process. Go does not end its threads, except the thread of a
// goroutine that exits while locked to it by runtime.LockOSThread: never
// start a command from such a goroutine, or it dies with the goroutine.
func tie(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// Kill kills the process group of cmd, started by Command or
// CommandContext: cmd and whatever it started that stayed in its group.
// Call it before Wait returns, while the group cannot be another's.
func Kill(cmd *exec.Cmd) error {
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != syscall.ESRCH {
		return err
	}
	return os.ErrProcessDone
}
