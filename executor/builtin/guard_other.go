//go:build !linux

package builtin

import (
	"errors"
	"os/exec"
)

// Without Linux's parent-death signal and child subreaper there is no
// guard. Programs start directly, in their own process group.

func enableGuards() {}

func runGuard([]string) int { return 2 }

// BecomeSubreaper is a no-op outside Linux.
func BecomeSubreaper() error { return nil }

var guardsOn atomicFalse

type atomicFalse struct{}

func (atomicFalse) Load() bool { return false }

type guard struct{}

func startGuarded(*exec.Cmd) (*guard, error) { return nil, errors.New("no exec guard on this system") }

func (*guard) stop() {}

func (*guard) finish(string, error) outcome { return outcome{} }
