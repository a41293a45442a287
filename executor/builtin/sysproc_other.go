//go:build !linux

package builtin

import "syscall"

// sysProcAttr puts the program in its own process group. Without Linux's
// Pdeathsig, a program outlives an executor killed outright.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// lockThread is needed only with Pdeathsig.
func lockThread() (unlock func()) { return func() {} }
