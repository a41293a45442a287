package main

import (
	"os"
	"os/signal"
	"syscall"
)

// stopSignals returns the signals that ask a daemon (maincontrol,
// executor, dev) for its graceful stop: SIGINT, SIGTERM and SIGHUP. SIGHUP
// is what a daemon gets when the terminal or ssh session that started it
// closes, and what `kill -HUP` out of habit sends to "reload"; Go's
// default for it is to exit at once (status 129: no snapshot, no drain, no
// bye), and there is no configuration to reload. But a SIGHUP ignored when
// the process started (nohup, or a shell trap with an empty action) stays
// ignored: whoever started it asked to outlive the terminal, and catching
// it would undo that.
func stopSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

// isHangup reports whether s is SIGHUP. A closing terminal sends it more
// than once (the shell forwards one, the kernel sends another as the
// session ends), so a repeated SIGHUP must not be taken for the second
// Ctrl-C that asks to stop at once.
func isHangup(s os.Signal) bool { return s == syscall.SIGHUP }
