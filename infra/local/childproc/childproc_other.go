//go:build !linux

package childproc

import "os/exec"

// tie does nothing: without a parent-death signal, a process group of its
// own would only keep a terminal's interrupt from reaching cmd.
func tie(*exec.Cmd) {}

// Kill kills cmd.
func Kill(cmd *exec.Cmd) error { return cmd.Process.Kill() }
