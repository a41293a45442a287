//go:build unix

package maincontrol

import (
	"math"
	"syscall"
)

// openFileLimit returns the soft limit on open files, or 0 when it cannot
// be read or is unlimited. A soft limit below the hard one is raised
// first. The Go runtime already does so at start on most systems.
func openFileLimit() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	if l.Cur < l.Max {
		raised := l
		raised.Cur = l.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			l = raised
		}
	}
	// The fields are int64 on some systems; unlimited is their maximum.
	cur := uint64(l.Cur)
	if cur == math.MaxUint64 || cur == math.MaxInt64 {
		return 0
	}
	return cur
}
