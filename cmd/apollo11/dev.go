package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/maincontrol"
)

// runDev runs a main control and two local executors in one process, for
// the quick start.
func runDev(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dev", "dev [flags]", stdout)
	var f maincontrolFlags
	f.register(fs)
	slots := fs.Int("executor-slots", 2, "slots of each local executor, 1 to 65536")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	sink := f.log.daemonSink(stderr)
	defer closeSink(sink)
	cfg, err := f.config(sink)
	if err != nil {
		return err
	}
	cfg.LogDropped = sink.Dropped
	if !cfg.TLS.Empty() {
		return usageError(errors.New("dev's executors dial its main port in plaintext: --tls-cert, --tls-key and --tls-client-ca are for maincontrol"))
	}
	// Every setting is checked, and the executors built, before the main
	// control starts. A bad --executor-slots must not be found after it
	// has opened the data dir and is listening.
	if *slots < 1 || *slots > executor.MaxSlots {
		return usageError(fmt.Errorf("--executor-slots %d: want 1 to %d", *slots, executor.MaxSlots))
	}
	if err := checkDialAddr("listen", dialAddr(cfg.Listen)); err != nil {
		return usageError(fmt.Errorf("%w: dev's executors dial it", err))
	}
	var executors []*executor.Executor
	for i := 1; i <= 2; i++ {
		// The executor daemon's defaults, from its own flag set, so that a
		// new flag (or a check of one) cannot leave dev with a zero.
		var ef executorFlags
		ef.register(flag.NewFlagSet("dev executor", flag.ContinueOnError))
		ef.connect, ef.id, ef.slots, ef.drainTimeout = dialAddr(cfg.Listen), fmt.Sprintf("dev-%d", i), *slots, 5*time.Second
		ef.types = "echo,sleep,fail" // as the banner below says
		ecfg, err := ef.config(cfg.Logger)
		if err != nil {
			return err
		}
		ecfg.Token = cfg.Core.Token
		ex, err := executor.New(ecfg)
		if badSettings(err) {
			return usageError(err)
		}
		if err != nil {
			return err
		}
		executors = append(executors, ex)
	}

	sigs := catchStopSignals()
	defer sigs.Stop()

	ready := make(chan struct{})
	cfg.OnReady = func(string) { close(ready) }
	mcCtx, stopMC := context.WithCancel(context.Background())
	defer stopMC()
	mcDone := make(chan error, 1)
	go func() { mcDone <- maincontrol.Run(mcCtx, cfg) }()
	select {
	case err := <-mcDone:
		if badSettings(err) {
			return usageError(err)
		}
		return err
	case <-ready:
	}

	exCtx, stopExecutors := context.WithCancel(context.Background())
	defer stopExecutors()
	var wg sync.WaitGroup
	exErrs := make(chan error, len(executors))
	for _, ex := range executors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := ex.Run(exCtx); err != nil {
				exErrs <- err
			}
		}()
	}
	addrFlag := "" // what the suggested commands need to reach this main control
	if dialAddr(cfg.Listen) != maincontrol.DefaultListen {
		addrFlag = " --addr " + dialAddr(cfg.Listen)
	}
	if f.tokenFile != "" {
		addrFlag += " --token-file " + f.tokenFile
	}
	cmd := selfCommand()
	fmt.Fprintf(stdout, `apollo11 dev: main control on %s (data dir %q), executors dev-1 and dev-2 (echo, sleep, fail).
Try, in another terminal:
  %s submit%s --type echo --arg msg=hi --wait
  %s submit%s --type sleep --arg ms=2000 --wait
  %s stats%s
Ctrl-C stops everything.
`, cfg.Listen, cfg.DataDir, cmd, addrFlag, cmd, addrFlag, cmd, addrFlag)

	select {
	case <-sigs.C:
	case err := <-mcDone:
		stopExecutors()
		wg.Wait()
		return err
	}
	// A second SIGINT or SIGTERM now ends the process at once. The
	// closing terminal's next SIGHUP must not end the stop under way.
	stopping := make(chan struct{})
	defer close(stopping)
	go sigs.exitOnSecond(stopping)
	stopExecutors()
	wg.Wait()
	stopMC()
	err = <-mcDone
	close(exErrs)
	for e := range exErrs {
		err = errors.Join(err, e)
	}
	return err
}
