package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// envPrefix is the prefix of the environment variables of flags.
const envPrefix = "APOLLO11_"

// envName returns the environment variable of a flag: the prefix and the
// flag's name in upper case with - as _.
func envName(prefix, flagName string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// flagEnvPrefix records the environment prefix of each flag set; the
// bench flags read their own (see bench.go).
var flagEnvPrefix = map[*flag.FlagSet]string{}

// newFlagSet returns a flag set whose flags read APOLLO11_* variables.
// stdout gets its usage, for a --help (see newFlagSetEnv).
func newFlagSet(name, synopsis string, stdout io.Writer) *flag.FlagSet {
	return newFlagSetEnv(envPrefix, name, synopsis, stdout)
}

// newFlagSetEnv returns a flag set whose flags read prefix* variables and
// whose usage lists each flag with its variable. The usage is printed on
// stdout, and only for a --help (see parseFlagsOperands): it is what was
// asked for, as `apollo11 --help` prints on stdout. The flag package's own
// output, an error followed by the whole usage, is discarded:
// parseFlagsOperands returns the error, which run prints on stderr with a
// pointer to --help, not after 33 lines of usage.
func newFlagSetEnv(prefix, name, synopsis string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flagEnvPrefix[fs] = prefix
	if collectFlagSets != nil {
		collectFlagSets(fs)
	}
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: apollo11 %s\n", synopsis)
		if hasFlags(fs) {
			fmt.Fprintf(stdout, "\nFlags (each also from its environment variable):\n")
		}
		fs.VisitAll(func(f *flag.Flag) {
			def := ""
			if f.DefValue != "" && !strings.Contains(f.Usage, "(default ") {
				// A usage that states its own default ("a third of
				// --heartbeat-timeout") is not followed by "(default 0s)".
				def = " (default " + f.DefValue + ")"
			}
			fmt.Fprintf(stdout, "  --%s  [%s]\n      %s%s\n", f.Name, envName(prefix, f.Name), f.Usage, def)
		})
	}
	return fs
}

// hasFlags reports whether fs defines any flag (version does not).
func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseFlags applies the command line, then the environment variables of
// the flags it did not set, for a command that takes no operands. The flag
// package stops at the first word that is not a flag, so a stray word
// would silently drop every flag after it: `--progress false --json F`
// (a boolean flag takes its value as --progress=false) ran without F.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := parseFlagsOperands(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Errorf("unexpected argument %q: this command takes only flags, and a boolean flag takes its value as --flag=false", fs.Arg(0)))
	}
	return nil
}

// fromEnv maps each flag whose value came from the environment (the
// command line did not override it) to its variable, so that an error
// about the value can name where it was set (see nameEnvSources).
var fromEnv = map[string]string{}

// nameEnvSources adds to an error message that names a flag set from the
// environment where its value came from: "--fsync: unknown fsync mode"
// alone sends an operator looking for a flag nobody typed.
func nameEnvSources(msg string) string {
	for _, name := range slices.Sorted(maps.Keys(fromEnv)) {
		lower := strings.ToLower(msg)
		if mentions(msg, "--"+name) || mentions(lower, settingName(name)) || mentions(lower, name) {
			msg += " (--" + name + " is set by " + fromEnv[name] + " in the environment)"
		}
	}
	return msg
}

// settingName is how the daemons' own settings checks name a flag's
// value ("heartbeat interval 8s is above ...", "addr ..."), lower case.
func settingName(flag string) string {
	if flag == "connect" {
		return "addr"
	}
	return strings.ReplaceAll(flag, "-", " ")
}

// mentions reports whether msg holds word as a whole word.
func mentions(msg, word string) bool {
	isWord := func(b byte) bool { return b == '-' || b == '_' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }
	for i := 0; ; {
		j := strings.Index(msg[i:], word)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(word)
		if (start == 0 || !isWord(msg[start-1]) || word[0] == '-') && (end == len(msg) || !isWord(msg[end])) {
			return true
		}
		i = start + 1
	}
}

// parseFlagsOperands is parseFlags for a command that takes operands (a
// task id, keys), which the command checks in fs.Args(). Flags may come
// before, between or after them (`status 7 --json`); after "--" every word
// is an operand.
func parseFlagsOperands(fs *flag.FlagSet, args []string) error {
	var operands []string
	for {
		if err := parseQuiet(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.Usage()
				return err
			}
			if word, ok := negativeOperand(fs, args, err); ok {
				operands = append(operands, word)
				args = fs.Args()
				continue
			}
			return helpError(fs, err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		// Parse stops at the first operand, or just after a "--".
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			operands = append(operands, rest...)
			break
		}
		operands = append(operands, rest[0])
		args = rest[1:]
	}
	if err := applyEnv(fs); err != nil {
		return usageError(err)
	}
	return fs.Parse(append([]string{"--"}, operands...)) // leaves fs.Args() = operands
}

// negativeOperand returns the word Parse refused as a flag not defined
// when it is a negative number: no flag is named by digits, so `status -1`
// gives an operand, which the command refuses in its own words ("-1" is
// not a task id), where the flag package said "flag provided but not
// defined: -1". Parse has consumed the word it refused.
func negativeOperand(fs *flag.FlagSet, args []string, err error) (string, bool) {
	i := len(args) - len(fs.Args()) - 1
	if i < 0 {
		return "", false
	}
	word := args[i]
	digits, ok := strings.CutPrefix(word, "-")
	if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", false
	}
	// Only the flag package's error for an undefined flag: the same word
	// is also the last one consumed when it was a flag's bad value
	// (`--after -5`), which must stay that flag's error. The package
	// exports no sentinel for it.
	return word, err.Error() == "flag provided but not defined: "+word
}

// parseQuiet is fs.Parse without the usage the flag package prints on
// every error as well as on -h: parseFlagsOperands prints it for -h only.
func parseQuiet(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {}
	defer func() { fs.Usage = usage }()
	return fs.Parse(args)
}

// helpError is usageError for fs's command line, with a line after the
// error that says where its flags are listed, instead of them all
// printed before it.
func helpError(fs *flag.FlagSet, err error) error {
	return exitError{code: 2, err: err, hint: "Run apollo11 " + fs.Name() + " --help for its flags."}
}

// applyEnv sets each flag the command line did not set from its
// environment variable, if any. After the command line, not before: a
// repeatable flag (--arg, --depends-on) adds each value it is given, so
// the environment's value must not be set at all when the command line
// gives the flag, or it would be added to the command line's values
// instead of losing to them.
func applyEnv(fs *flag.FlagSet) error {
	prefix, ok := flagEnvPrefix[fs]
	if !ok {
		prefix = envPrefix
	}
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := envName(prefix, f.Name)
		v, ok := os.LookupEnv(name)
		if !ok || onCommandLine[f.Name] || err != nil {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				e = errors.New("want true or false") // the flag package says "parse error"
			}
			err = fmt.Errorf("environment %s=%q: %w", name, v, e)
			return
		}
		fromEnv[f.Name] = name
	})
	return err
}

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
	// Keywords are taken in any case, as --log-level always was (slog's
	// parser ignores case): --log-format JSON was refused.
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

// positive refuses a flag value below or at 0. The daemons' Config types
// read a zero as "the default", which suits Go callers but not a command
// line: an explicit --max-conns 0 must not quietly mean 65536.
func positive[T int | time.Duration](name string, v T) error {
	if v > 0 {
		return nil
	}
	return fmt.Errorf("--%s %v: must be more than 0", name, v)
}

// positiveMs is positive for a daemon's duration flag, which must also be
// 1ms or more, every one alike: the daemons count time in milliseconds,
// and --heartbeat-interval 1ns was refused ("below 1ms") while
// --start-timeout 1ns was taken and rounded. (bench's --threshold 50µs
// is a real value: bench keeps positive.)
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

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// durationValue is a duration flag whose error says what is wanted: the
// flag package's own reports only "parse error" (for --request-timeout 10,
// a number with no unit).
type durationValue time.Duration

func (d *durationValue) String() string { return (*time.Duration)(d).String() }
func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration with a unit, like 15s, 500ms or 2m")
	}
	*d = durationValue(v)
	return nil
}

// durationVar defines a duration flag (see durationValue).
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationValue)(p), name, usage)
}
