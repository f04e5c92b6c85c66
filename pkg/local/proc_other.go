//go:build !unix

package local

import (
	"errors"
	"os"
	"syscall"
)

// Supported tells why this system cannot run pods here, nil when it can.
func Supported() error {
	return errors.New("generator run --local runs on Linux and macOS: it needs process groups to stop every process a pod starts")
}

func sysProcAttr() *syscall.SysProcAttr { return nil }

func killGroup(int, bool) {}

func exitCode(state *os.ProcessState) int32 { return int32(state.ExitCode()) }

func HoldMachine(string, string, func(string)) (func(), error) { return nil, Supported() }
