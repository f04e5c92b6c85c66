//go:build unix

package local

import (
	"os"
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
