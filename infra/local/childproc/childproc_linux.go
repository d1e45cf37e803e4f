//go:build linux

package childproc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// tie makes cmd the leader of a process group of its own, which Kill ends,
// and has the kernel send it SIGTERM when its parent dies
// (PR_SET_PDEATHSIG). SIGTERM rather than SIGKILL: the emulator runs its
// function in a group of its own and kills it on SIGTERM, and make passes
// it on to its jobs. The signal reaches cmd alone: what cmd started ends
// only as cmd has it end (go build, on SIGTERM, exits and leaves the
// compiler and linker steps under way to finish; sh exits and leaves its
// command running).
//
// The kernel sends the signal when the OS thread that started cmd exits,
// not the process. Go does not end its threads, except the thread of a
// goroutine that exits while locked to it by runtime.LockOSThread: never
// start a command from such a goroutine, or it dies with the goroutine.
func tie(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// Kill kills cmd, started by Command or CommandContext, with its process
// group, and the group of each process under it that leads a group of its
// own (the emulator's function): cmd stops first (SIGSTOP), so that it
// reaps none of its children, whose pids and groups stay theirs until the
// kill. Once Wait has reaped cmd, Kill signals nothing and returns
// os.ErrProcessDone: cmd's pid may be another's by then.
func Kill(cmd *exec.Cmd) error {
	// Process.Signal, unlike kill(2), never reaches a reaped process.
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	for _, leader := range leadersUnder(cmd.Process.Pid) {
		_ = syscall.Kill(-leader, syscall.SIGKILL)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != syscall.ESRCH {
		return err
	}
	return os.ErrProcessDone
}

// leadersUnder lists the processes under pid that lead their process
// group, as /proc shows them.
func leadersUnder(pid int) []int {
	children, leads := map[int][]int{}, map[int]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// After the command's name: the state, the parent, the group
		// (fields 3 to 5 of proc_pid_stat(5)).
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		name := bytes.LastIndexByte(b, ')')
		var state string
		var ppid, pgid int
		if err != nil || name < 0 {
			continue
		}
		if _, err := fmt.Sscan(string(b[name+1:]), &state, &ppid, &pgid); err == nil {
			children[ppid] = append(children[ppid], p)
			leads[p] = pgid == p
		}
	}
	var leaders []int
	under := children[pid]
	for i := 0; i < len(under); i++ {
		under = append(under, children[under[i]]...)
		if leads[under[i]] {
			leaders = append(leaders, under[i])
		}
	}
	return leaders
}

// clockTicks is the unit of the CPU times in /proc/PID/stat (USER_HZ,
// 100 on Linux).
const clockTicks = 100

// CPU is the CPU time (user and system) that cmd's process has spent so
// far, read from /proc.
func CPU(cmd *exec.Cmd) (time.Duration, error) {
	pid := cmd.Process.Pid
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command's name, which is in parentheses and
	// may hold spaces: state is the first, utime the 12th, stime the 13th.
	fields := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
