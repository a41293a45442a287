package main

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

// stopSignals returns the signals that ask a daemon (maincontrol,
// executor, dev) for its graceful stop. They are SIGINT, SIGTERM and
// SIGHUP. A daemon gets SIGHUP when the terminal or ssh session that
// started it closes. Out of habit, people send it with `kill -HUP` to
// "reload". Go's default for it is to exit at once, with status 129 and
// no snapshot, drain or bye. There is no configuration to reload. But a
// SIGHUP ignored when the process started stays ignored. nohup does that,
// as does a shell trap with an empty action. Whoever started the process
// asked to outlive the terminal, and catching it would undo that.
func stopSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

// isHangup reports whether s is SIGHUP. A closing terminal sends it more
// than once. The shell forwards one, and the kernel sends another as the
// session ends. So a repeated SIGHUP must not count as the second Ctrl-C
// that asks to stop at once.
func isHangup(s os.Signal) bool { return s == syscall.SIGHUP }

// stopCatcher catches a daemon's stop signals (see stopSignals) on C. It
// knows which of them were ignored when the process started, for
// exitAtOnce. os/signal cannot tell once it catches them.
type stopCatcher struct {
	C              chan os.Signal
	ignoredAtStart map[os.Signal]bool
}

// catchStopSignals starts catching the stop signals. Stop ends it.
func catchStopSignals() *stopCatcher {
	sigs := stopSignals()
	c := &stopCatcher{C: make(chan os.Signal, 2), ignoredAtStart: map[os.Signal]bool{}}
	for _, s := range sigs {
		c.ignoredAtStart[s] = signal.Ignored(s)
	}
	signal.Notify(c.C, sigs...)
	return c
}

// Stop stops catching the stop signals.
func (c *stopCatcher) Stop() { signal.Stop(c.C) }

// exitOnSecond ends the process at once (see exitAtOnce) on the next
// SIGINT or SIGTERM, until done is closed. It is called once the first
// stop signal started the graceful stop. A SIGHUP does not end it, as it
// is the closing terminal again (see isHangup).
func (c *stopCatcher) exitOnSecond(done <-chan struct{}) {
	for {
		select {
		case s := <-c.C:
			if !isHangup(s) {
				c.exitAtOnce(s)
			}
		case <-done:
			return
		}
	}
}

// exitAtOnce ends the process as a second SIGINT or SIGTERM asks. `dev`
// once stopped catching the signal to let its default action run. That
// works only when the default was its action at start. os/signal gives a
// signal back the action it had then. A shell starts a script's background
// job (`apollo11 dev &`) with SIGINT ignored, so there the second SIGINT
// did nothing. A signal whose action at start was the default still gets
// it, and kills the process. A shell running a script stops only at a
// command killed by SIGINT. A signal ignored at start exits with the
// status a shell reports for a process killed by it, 128+n.
func (c *stopCatcher) exitAtOnce(s os.Signal) {
	sig := s.(syscall.Signal)
	if !c.ignoredAtStart[s] {
		signal.Reset(s)
		_ = syscall.Kill(os.Getpid(), sig)
		time.Sleep(time.Second) // delivered to some thread: it ends the process meanwhile
	}
	os.Exit(128 + int(sig))
}
