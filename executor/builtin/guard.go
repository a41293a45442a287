package builtin

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// guardFlag, as a process's first argument, makes it an exec guard.
const guardFlag = "--apollo11-exec-guard"

// GuardMain makes this binary able to guard the programs Exec runs. Call
// it first thing in main. A binary that calls it is re-executed (as
// /proc/self/exe) between the executor and each program. GuardMain then
// runs the guard and exits instead of returning. On Linux the guard makes
// containment full (see the package documentation). Elsewhere, and in a
// binary that never calls GuardMain, Exec starts programs directly.
func GuardMain() {
	if len(os.Args) > 2 && os.Args[1] == guardFlag {
		os.Exit(runGuard(os.Args[2:]))
	}
	enableGuards()
}

// outcome is how a program ended. It holds the wait status and the error
// Exec reports. The status is known unless the program never started or
// its guard was killed.
type outcome struct {
	ws       syscall.WaitStatus
	known    bool
	err      error
	startErr error // the program did not start (reported by its guard)
}

// waitOutcome is the outcome of a program that ended with ws.
func waitOutcome(ws syscall.WaitStatus) outcome {
	oc := outcome{ws: ws, known: true}
	if t := statusText(ws); t != "" {
		oc.err = errors.New(t)
	}
	return oc
}

// statusText is os.ProcessState's text for a wait status ("" for exit 0).
func statusText(ws syscall.WaitStatus) string {
	switch {
	case ws.Exited() && ws.ExitStatus() == 0:
		return ""
	case ws.Exited():
		return "exit status " + strconv.Itoa(ws.ExitStatus())
	case ws.Signaled() && ws.CoreDump():
		return "signal: " + ws.Signal().String() + " (core dumped)"
	case ws.Signaled():
		return "signal: " + ws.Signal().String()
	}
	return fmt.Sprintf("wait status %#x", uint32(ws))
}

// The guard reports to the executor on its status pipe, in one line.
// It sends "S <wait status>" once the program ended. It sends
// "E <errno> <message>" when the program could not start.

func formatStatus(ws syscall.WaitStatus) string {
	return "S " + strconv.FormatUint(uint64(ws), 10) + "\n"
}

func formatStartErr(err error) string {
	var errno syscall.Errno
	errors.As(err, &errno)
	return "E " + strconv.FormatUint(uint64(errno), 10) + " " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n"
}

// parseReport reads the guard's line. It holds the program's wait status,
// or the error that kept it from starting. ok is false for anything else,
// as when the guard was killed before it reported.
func parseReport(line string) (ws syscall.WaitStatus, startErr error, ok bool) {
	kind, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	switch kind {
	case "S":
		n, err := strconv.ParseUint(rest, 10, 32)
		return syscall.WaitStatus(n), nil, err == nil
	case "E":
		code, msg, _ := strings.Cut(rest, " ")
		n, err := strconv.ParseUint(code, 10, 32)
		if err != nil {
			return 0, nil, false
		}
		if n == 0 {
			return 0, errors.New(msg), true
		}
		return 0, startError{msg: msg, errno: syscall.Errno(n)}, true
	}
	return 0, nil, false
}

// startError is a start failure the guard reported. It keeps the message,
// and the errno for errors.Is. E2BIG is permanent, and ENOENT is retried.
type startError struct {
	msg   string
	errno syscall.Errno
}

func (e startError) Error() string { return e.msg }
func (e startError) Unwrap() error { return e.errno }
