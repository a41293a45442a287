//go:build linux

package builtin

import (
	"runtime"
	"syscall"
)

// sysProcAttr puts the program in its own process group. It has the
// kernel send the program SIGKILL when its parent dies. So an executor
// killed outright (kill -9, the OOM killer) leaves no program of its own
// running while the main control dispatches the task again.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// lockThread keeps the calling goroutine on its OS thread until unlock.
// The kernel's "parent" for Pdeathsig is the thread that started the
// child, not the process (prctl(2)). The runtime ends a thread whose
// goroutine exits locked to it. Were that thread to end while the program
// runs, the program would be killed. Held from the start to the wait, the
// thread runs nothing else meanwhile. So nothing can end it.
func lockThread() (unlock func()) {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
