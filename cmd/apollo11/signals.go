package main

import (
	"os"
	"syscall"
)

// stopSignals ask a daemon (maincontrol, executor, dev) for its graceful
// stop. SIGHUP is one of them: it is what a daemon gets when the terminal
// or ssh session that started it closes, and what `kill -HUP` out of habit
// sends to "reload". Go's default for it is to exit at once (status 129:
// no snapshot, no drain, no bye); a graceful stop is strictly better, and
// there is no configuration to reload.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
