package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/apollo11/apollo11/internal/cli"
)

// envPrefix is the prefix of the environment variables of flags.
const envPrefix = "APOLLO11_"

// app is this program for the flag plumbing, with its name and variables.
var app = &cli.Program{Name: "apollo11", EnvPrefix: envPrefix}

// newFlagSet returns a flag set whose flags read APOLLO11_* variables.
// stdout gets its usage, for a --help.
func newFlagSet(name, synopsis string, stdout io.Writer) *flag.FlagSet {
	return app.NewFlagSet(name, synopsis, stdout)
}

// parseFlags parses a command line of flags only, then the environment.
func parseFlags(fs *flag.FlagSet, args []string) error { return app.Parse(fs, args) }

// parseFlagsOperands is parseFlags for a command that takes operands.
func parseFlagsOperands(fs *flag.FlagSet, args []string) error { return app.ParseOperands(fs, args) }

// helpError is a bad command line, with a pointer to fs's --help.
func helpError(fs *flag.FlagSet, err error) error { return app.HelpError(fs, err) }

// usageError makes a command-line error exit 2.
func usageError(err error) error { return cli.UsageError(err) }

// exitError carries an exit code, and what to print, through an error.
type exitError = cli.ExitError

// nameEnvSources adds to an error which variable set a flag it names.
func nameEnvSources(msg string) string { return app.NameEnvSources(msg, settingName) }

// settingName is how the daemons' own settings checks name a flag's
// value ("heartbeat interval 8s is above ...", "addr ..."), lower case.
func settingName(flag string) string {
	if flag == "connect" {
		return "addr"
	}
	return strings.ReplaceAll(flag, "-", " ")
}

// durationVar defines a duration flag whose error names the format.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	cli.DurationVar(fs, p, name, value, usage)
}

// positive refuses a flag value at or below 0.
func positive[T int | time.Duration](name string, v T) error { return cli.Positive(name, v) }

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error { return cli.FirstErr(errs...) }

// logFlags are the logging flags every daemon has.
type logFlags struct {
	level  string
	format string
}

func (l *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&l.format, "log-format", "text", "log format: text or json")
}

func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	h, err := l.handler(w)
	if err != nil {
		return nil, err
	}
	return slog.New(h), nil
}

func (l *logFlags) handler(w io.Writer) (slog.Handler, error) {
	// Keywords are taken in any case, as --log-level always was, since slog's
	// parser ignores case. So --log-format JSON is taken too.
	format := strings.ToLower(l.format)
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(l.level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", l.level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		return slog.NewTextHandler(w, opts), nil
	case "json":
		opts.ReplaceAttr = durationText
		return slog.NewJSONHandler(w, opts), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", l.format)
}

// durationText writes durations as the text handler and the flags do
// ("1.5s"), not as JSON's default integer nanoseconds.
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// positiveMs is positive for a daemon's duration flag, which must also be
// 1ms or more, every one alike. The daemons count time in milliseconds.
// So --start-timeout 1ns is refused, as --heartbeat-interval 1ns was.
// apollo11-bench's --threshold 50µs is a real value, and keeps positive.
func positiveMs(name string, d time.Duration) error {
	if err := positive(name, d); err != nil {
		return err
	}
	if d < time.Millisecond {
		return fmt.Errorf("--%s %v: %w", name, d, errBelowMs)
	}
	return nil
}

// errBelowMs says why a duration below 1ms is refused.
var errBelowMs = errors.New("below 1ms, the least any duration flag of the daemons takes")
