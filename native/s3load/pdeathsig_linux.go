package main

import (
	"os"
	"syscall"
)

// If backupbench dies without stopping us (SIGKILL, a crash), stop too: the kernel sends
// SIGTERM, which ends the phase like an interrupt. init runs on the main thread, where the
// setting must be made.
func init() {
	parent := os.Getppid()
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0)
	if os.Getppid() != parent {
		os.Exit(130)
	}
}
