//go:build unix

package local

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Supported tells why this system cannot run pods here, nil when it can.
func Supported() error { return nil }

// sysProcAttr puts a process in a process group of its own, which it and
// everything it starts share.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup sends the process group of pid SIGTERM, or SIGKILL.
func killGroup(pid int, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	syscall.Kill(-pid, sig)
}

// exitCode is a process's exit code as the kubelet reports a container's:
// 128 + the signal that ended it.
func exitCode(state *os.ProcessState) int32 {
	if status, ok := state.Sys().(syscall.WaitStatus); ok && status.Signaled() {
		return 128 + int32(status.Signal())
	}
	return int32(state.ExitCode())
}

// HoldMachine takes the lock at path, which one run of this machine holds
// at a time: a run's pods share the machine's ports (torch's store listens
// on every address) and its mount paths, so two runs at once would meet at
// the master's port, and the first to end would remove the other's mounts.
// While another run holds it, waiting is told who (its pid and job, as it
// wrote them) and HoldMachine waits. release gives the lock back.
func HoldMachine(path, job string, waiting func(holder string)) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("the lock of this machine's runs, %s: %w", path, err)
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		holder, _ := os.ReadFile(path)
		waiting(strings.TrimSpace(string(holder)))
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("the lock of this machine's runs, %s: %w", path, err)
		}
	}
	f.Truncate(0)
	f.WriteAt([]byte(fmt.Sprintf("pid %d, %s\n", os.Getpid(), job)), 0)
	return func() { f.Close() }, nil
}
