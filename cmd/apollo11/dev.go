package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/maincontrol"
)

// runDev runs a main control and two local executors in one process, for
// the quick start. With --cluster N it runs N main controls as a local
// cluster instead, and the executors follow its leader.
func runDev(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dev", "dev [flags]", stdout)
	var f maincontrolFlags
	f.register(fs)
	slots := fs.Int("executor-slots", 2, "slots of each local executor, 1 to 65536")
	members := fs.Int("cluster", 0, "run a local cluster of this many members (3: try failover) instead of one main control")
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
	if cfg.Advertise != "" {
		return usageError(errors.New("--advertise names one cluster member; dev's members are known by their loopback addresses: it is for maincontrol"))
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
	cfgs, err := devMembers(cfg, *members)
	if err != nil {
		return usageError(err)
	}
	addrs := make([]string, len(cfgs))
	for i, c := range cfgs {
		addrs[i] = dialAddr(c.Listen)
	}
	addrList := strings.Join(addrs, ",")
	var executors []*executor.Executor
	for i := 1; i <= 2; i++ {
		// The executor daemon's defaults, from its own flag set, so that a
		// new flag (or a check of one) cannot leave dev with a zero.
		var ef executorFlags
		ef.register(flag.NewFlagSet("dev executor", flag.ContinueOnError))
		ef.connect, ef.id, ef.slots, ef.drainTimeout = addrList, fmt.Sprintf("dev-%d", i), *slots, 5*time.Second
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

	mcCtx, stopMC := context.WithCancel(context.Background())
	defer stopMC()
	mcDone := make(chan error, len(cfgs)) // the first member to stop
	var mcs sync.WaitGroup
	ready := make(chan struct{}, len(cfgs))
	for _, c := range cfgs {
		c.OnReady = func(string) { ready <- struct{}{} }
		mcs.Add(1)
		go func() {
			defer mcs.Done()
			mcDone <- maincontrol.Run(mcCtx, c)
		}()
	}
	for range cfgs {
		select {
		case err := <-mcDone:
			stopMC()
			mcs.Wait()
			if badSettings(err) {
				return usageError(err)
			}
			return err
		case <-ready:
		}
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
	if addrList != maincontrol.DefaultListen {
		addrFlag = " --addr " + addrList
	}
	if f.tokenFile != "" {
		addrFlag += " --token-file " + f.tokenFile
	}
	cmd := selfCommand()
	if len(cfgs) == 1 {
		fmt.Fprintf(stdout, "apollo11 dev: main control on %s (data dir %q), executors dev-1 and dev-2 (echo, sleep, fail).\n",
			cfg.Listen, cfg.DataDir)
	} else {
		fmt.Fprintf(stdout, "apollo11 dev: a cluster of %d main controls on %s (data dirs %s-cluster/1..%d), executors dev-1 and dev-2 (echo, sleep, fail).\n",
			len(cfgs), addrList, cfg.DataDir, len(cfgs))
	}
	fmt.Fprintf(stdout, `Try, in another terminal:
  %s submit%s --type echo --arg msg=hi --wait
  %s submit%s --type sleep --arg ms=2000 --wait
  %s stats%s
`, cmd, addrFlag, cmd, addrFlag, cmd, addrFlag)
	if len(cfgs) > 1 {
		fmt.Fprintf(stdout, "  %s cluster status%s\n  %s cluster transfer-leadership%s\n", cmd, addrFlag, cmd, addrFlag)
	}
	fmt.Fprintln(stdout, "Ctrl-C stops everything.")

	select {
	case <-sigs.C:
	case err := <-mcDone:
		stopExecutors()
		wg.Wait()
		stopMC()
		mcs.Wait()
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
	mcs.Wait()
	close(mcDone)
	err = nil
	for e := range mcDone {
		err = errors.Join(err, e)
	}
	close(exErrs)
	for e := range exErrs {
		err = errors.Join(err, e)
	}
	return err
}
