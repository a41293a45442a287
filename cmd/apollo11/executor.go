package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/executor/builtin"
	"github.com/apollo11/apollo11/internal/footprint"
	"github.com/apollo11/apollo11/internal/tlsfiles"
)

// executorFlags are the executor daemon's settings as flags.
type executorFlags struct {
	connect, id, types, tokenFile, execAllow string
	slots, execMaxOutput                     int
	drainTimeout                             time.Duration
	allowExec                                bool
	tls                                      tlsPeerFlags
	log                                      logFlags
	// tlsFiles, when TLS is on, is read again on SIGHUP.
	tlsFiles *tlsfiles.Loader
}

func defaultExecutorID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "executor"
	}
	// Keep to the executor_id alphabet, A-Z a-z 0-9 _ . : -
	host = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == ':', r == '-':
			return r
		}
		return '-'
	}, host)
	return host + "-" + strconv.Itoa(os.Getpid())
}

func (f *executorFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.connect, "connect", "127.0.0.1:1969", "main control address, or a cluster's member addresses, comma-separated")
	fs.StringVar(&f.id, "id", "", "executor id, unique among connected executors (default <hostname>-<pid>)")
	fs.StringVar(&f.types, "types", "echo,sleep,fail", "task types to run: echo, sleep, fail, exec (comma-separated)")
	fs.IntVar(&f.slots, "slots", 1, "tasks run at once, 1 to 65536")
	fs.StringVar(&f.tokenFile, "token-file", "", "shared token file, when the main control requires auth")
	durationVar(fs, &f.drainTimeout, "drain-timeout", 30*time.Second, "on SIGTERM, how long running tasks may finish before they are cancelled")
	fs.BoolVar(&f.allowExec, "allow-exec", false, "allow the exec task type to run programs (off by default)")
	fs.StringVar(&f.execAllow, "exec-allow", "", "comma-separated absolute paths of the programs exec may run")
	fs.IntVar(&f.execMaxOutput, "exec-max-output", builtin.DefaultMaxOutput, "bytes of stdout and of stderr an exec task keeps")
	f.tls.register(fs)
	f.log.register(fs)
}

// config turns the flags into an executor.Config.
func (f *executorFlags) config(logger *slog.Logger) (executor.Config, error) {
	if f.id == "" {
		f.id = defaultExecutorID()
	}
	addrs, addrErr := dialAddrs("connect", f.connect)
	if err := firstErr(addrErr, positive("slots", f.slots), positiveMs("drain-timeout", f.drainTimeout),
		positive("exec-max-output", f.execMaxOutput)); err != nil {
		return executor.Config{}, usageError(err)
	}
	if f.slots > 65536 {
		return executor.Config{}, usageError(fmt.Errorf("--slots %d: want 1 to 65536 (spec section 4)", f.slots))
	}
	cfg := executor.Config{Addr: addrs[0], Addrs: addrs[1:], ID: f.id, Slots: f.slots, DrainTimeout: f.drainTimeout,
		Logger: logger, Handlers: map[string]executor.Handler{}}
	if f.tokenFile != "" {
		tok, err := auth.LoadToken(f.tokenFile)
		if err != nil {
			return cfg, err
		}
		warnToken(logger, f.tokenFile, tok)
		cfg.Token = tok
	}
	var err error
	f.tlsFiles, err = f.tls.load(logger)
	if err != nil {
		return cfg, err
	}
	if f.tlsFiles != nil {
		cfg.TLS = f.tlsFiles.ClientConfig("")
	}
	var allow []string
	for _, p := range strings.Split(f.execAllow, ",") {
		if p == "" {
			if f.execAllow == "" {
				continue // no list at all
			}
			return cfg, usageError(fmt.Errorf("--exec-allow %q: an empty item", f.execAllow))
		}
		if !filepath.IsAbs(p) {
			// exec runs only absolute paths, so this entry could never match.
			return cfg, usageError(fmt.Errorf("--exec-allow: %q is not an absolute path", p))
		}
		allow = append(allow, p)
	}
	for _, t := range strings.Split(f.types, ",") {
		switch t {
		case "echo":
			cfg.Handlers[t] = builtin.Echo()
		case "sleep":
			cfg.Handlers[t] = builtin.Sleep()
		case "fail":
			cfg.Handlers[t] = builtin.Fail()
		case "exec":
			if !f.allowExec {
				// It would register exec and fail every exec task it took,
				// for good, even with an executor that allows exec connected.
				return cfg, usageError(errors.New("--types exec needs --allow-exec (and --exec-allow): without it every exec task sent here would fail"))
			}
			if len(allow) == 0 {
				// An empty allow list runs nothing: every exec task would fail.
				return cfg, usageError(errors.New("--types exec needs --exec-allow with the programs exec may run: with none, every exec task sent here would fail"))
			}
			if err := checkPrograms(allow); err != nil {
				return cfg, usageError(err)
			}
			cfg.Handlers[t] = builtin.Exec(builtin.ExecConfig{Enabled: true, Allow: allow, MaxOutput: f.execMaxOutput})
		case "":
			return cfg, usageError(fmt.Errorf("--types %q: an empty item", f.types))
		default:
			return cfg, usageError(fmt.Errorf("--types: unknown built-in task type %q (echo, sleep, fail, exec)", t))
		}
	}
	if f.allowExec && cfg.Handlers["exec"] == nil {
		logger.Warn("--allow-exec given but exec is not in --types: nothing will run programs")
	}
	return cfg, nil
}

func runExecutor(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("executor", "executor [flags]", stdout)
	var f executorFlags
	f.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	sink := f.log.daemonSink(stderr)
	defer closeSink(sink)
	logger, err := f.log.logger(sink)
	if err != nil {
		return usageError(err)
	}
	cfg, err := f.config(logger)
	if err != nil {
		return err
	}
	if cfg.Handlers["exec"] != nil {
		// What a killed guard leaves behind comes here, to die when its
		// task ends (executor/builtin/guard_linux.go).
		if err := builtin.BecomeSubreaper(); err != nil {
			logger.Warn("exec: programs whose guard is killed may outlive their task", "err", err)
		}
	}
	ex, err := executor.New(cfg)
	if badSettings(err) {
		return usageError(err)
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := stopSignals()
	if f.tlsFiles != nil {
		// Certificates are rotated under a running daemon: SIGHUP reads
		// the TLS files again, as it does for maincontrol.
		var reload <-chan struct{}
		var stopReload func()
		sigs, reload, stopReload = reloadOnHangup()
		defer stopReload()
		go func() {
			for {
				select {
				case <-reload:
					_ = f.tlsFiles.Reload() // a failure is logged; the old files stay
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go stopOnSignals(sigs, cancel, ex.Stop, logger)
	go keepFootprint(ctx, logger, nil)
	return ex.Run(ctx)
}

// stopOnSignals cancels, for a graceful stop, on the first of sigs (see
// stopSignals). It calls hard on a later SIGTERM or SIGINT. A later SIGHUP
// is the same closing terminal again (see isHangup).
func stopOnSignals(sigs []os.Signal, graceful func(), hard func(), log *slog.Logger) {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, sigs...)
	defer signal.Stop(sig)
	s := <-sig
	log.Info("stopping: draining running tasks (SIGINT or SIGTERM again to stop at once)", "signal", s.String())
	graceful()
	for s := <-sig; isHangup(s); s = <-sig {
	}
	log.Warn("second signal: stopping at once")
	hard()
}

// checkPrograms refuses an --exec-allow entry that can never run, such as
// a missing file or a directory. Taken without a word, it would fail
// every exec task naming it. It also refuses one that other users could
// replace.
func checkPrograms(allow []string) error {
	for _, p := range allow {
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("--exec-allow: %s does not exist", p)
		case err != nil:
			return fmt.Errorf("--exec-allow: %w", err)
		case st.IsDir():
			return fmt.Errorf("--exec-allow: %s is a directory, not a program", p)
		case st.Mode()&0o111 == 0:
			return fmt.Errorf("--exec-allow: %s is not executable", p)
		}
		if err := builtin.CheckProgram(p); err != nil {
			return fmt.Errorf("--exec-allow: %w", err)
		}
	}
	return nil
}

// keepFootprint drops the pages of the binary an idle daemon no longer
// uses. It does so 3 s after the start, when startup is over, then every
// minute, and at each receive from now.
func keepFootprint(ctx context.Context, log *slog.Logger, now <-chan struct{}) {
	footprint.Keep(ctx, 3*time.Second, time.Minute, now, func(err error) {
		if err != nil {
			log.Warn("cannot release the unused pages of the binary", "err", err)
			return
		}
		log.Info("released the pages of the binary that startup used")
	})
}

// warnToken logs what is weak about a daemon's token file (see
// auth.TokenFileWarnings).
func warnToken(log *slog.Logger, path string, tok []byte) {
	for _, w := range auth.TokenFileWarnings(path, tok) {
		log.Warn(w)
	}
}
