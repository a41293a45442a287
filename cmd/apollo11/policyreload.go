package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// reloadOnHangup makes SIGHUP reload the policy file rather than stop the
// main control, as daemons with a configuration file do. It returns the
// signals that still stop it (SIGINT, SIGTERM), a channel that receives
// once per SIGHUP, and a function that stops catching it. SIGHUP is caught
// even when ignored at start (nohup). A reload does not end the process,
// which is what nohup protects.
func reloadOnHangup() ([]os.Signal, <-chan struct{}, func()) {
	hup := make(chan os.Signal, 1)
	reload := make(chan struct{}, 1)
	done := make(chan struct{})
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-hup:
				select {
				case reload <- struct{}{}:
				default: // a reload is already pending: it reads the newest file
				}
			case <-done:
				return
			}
		}
	}()
	stop := func() {
		signal.Stop(hup)
		close(done)
	}
	return []os.Signal{os.Interrupt, syscall.SIGTERM}, reload, stop
}

// retryOrder refuses a retry cap below the retry base.
func retryOrder(base, ceil time.Duration) error {
	if ceil < base {
		return fmt.Errorf("--retry-cap %v is below --retry-base %v", ceil, base)
	}
	return nil
}

// flagSet reports whether the command line gave the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
