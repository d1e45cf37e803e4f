//go:build !linux

package childproc

import (
	"errors"
	"os/exec"
	"time"
)

// tie does nothing: without a parent-death signal, a process group of its
// own would only keep a terminal's interrupt from reaching cmd.
func tie(*exec.Cmd) {}

// Kill kills cmd.
func Kill(cmd *exec.Cmd) error { return cmd.Process.Kill() }

// CPU is not read on this system.
func CPU(*exec.Cmd) (time.Duration, error) {
	return 0, errors.New("a process's CPU time is read from /proc, on Linux only")
}
