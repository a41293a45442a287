// Package cli is the flag plumbing of apollo11's commands.
// Every flag also reads an environment variable.
// Operands may sit between flags.
// A bad command line exits 2 with one error line and a pointer to --help.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
)

// Program is one command-line program.
// It holds its name in usage and errors, and its flags' variable prefix.
type Program struct {
	Name      string
	EnvPrefix string

	// fromEnv maps each flag set from the environment to its variable.
	fromEnv map[string]string
}

// EnvName returns the variable of a flag.
// That is the prefix, then the name in upper case with - as _.
func (p *Program) EnvName(flagName string) string {
	return p.EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// NewFlagSet returns a flag set named name (the subcommand).
// Its usage lists each flag with its variable.
// The usage is printed on stdout, for --help only.
// The flag package's own output is discarded.
// A parse error is returned instead, and the caller prints it as one line.
func (p *Program) NewFlagSet(name, synopsis string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: %s %s\n", p.Name, synopsis)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintf(stdout, "\nFlags (each also from its environment variable):\n")
		}
		fs.VisitAll(func(f *flag.Flag) {
			def := ""
			if f.DefValue != "" && !strings.Contains(f.Usage, "(default ") {
				// A usage that states its own default is not followed
				// by "(default 0s)".
				def = " (default " + f.DefValue + ")"
			}
			fmt.Fprintf(stdout, "  --%s  [%s]\n      %s%s\n", f.Name, p.EnvName(f.Name), f.Usage, def)
		})
	}
	return fs
}

// Parse is for a command that takes no operands.
// It applies the command line, then the variables of the flags it did not set.
// A stray word is an error.
// Otherwise the flag package would silently drop every flag after it.
func (p *Program) Parse(fs *flag.FlagSet, args []string) error {
	if err := p.ParseOperands(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return UsageError(fmt.Errorf("unexpected argument %q: this command takes only flags, and a boolean flag takes its value as --flag=false", fs.Arg(0)))
	}
	return nil
}

// ParseOperands is Parse for a command that takes operands.
// The command reads them from fs.Args().
// Flags may come before, between or after them.
// After "--" every word is an operand.
// A negative number is an operand too, unless it is a flag's value.
// No flag is named by digits, and the command refuses it in its own words.
func (p *Program) ParseOperands(fs *flag.FlagSet, args []string) error {
	var operands []string
	for len(args) > 0 {
		if isNegativeNumber(args[0]) {
			operands, args = append(operands, args[0]), args[1:]
			continue
		}
		end := flagsEnd(fs, args)
		if err := parseQuiet(fs, args[:end]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.Usage()
				return err
			}
			return p.HelpError(fs, err)
		}
		rest := fs.Args()
		if done := end - len(rest); done > 0 && args[done-1] == "--" {
			operands = append(operands, rest...) // Parse stops just after a "--"
			break
		}
		if len(rest) > 0 {
			operands, rest = append(operands, rest[0]), rest[1:] // Parse stops at an operand
		}
		args = append(rest, args[end:]...)
	}
	if err := p.applyEnv(fs); err != nil {
		return UsageError(err)
	}
	return fs.Parse(append([]string{"--"}, operands...)) // leaves fs.Args() = operands
}

// flagsEnd returns where the words Parse may take end.
// That is the first negative number that is not a flag's value, or the end.
func flagsEnd(fs *flag.FlagSet, args []string) int {
	for i := 0; i < len(args); i++ {
		word := args[i]
		switch {
		case word == "--":
			return len(args)
		case isNegativeNumber(word):
			return i
		case strings.HasPrefix(word, "-") && !strings.Contains(word, "="):
			if f := fs.Lookup(strings.TrimLeft(word, "-")); f != nil && !isBool(f) {
				i++ // its value, which may be a negative number
			}
		}
	}
	return len(args)
}

// isBool reports whether f is a boolean flag, which takes no separate value.
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// isNegativeNumber reports whether word is "-" and digits.
func isNegativeNumber(word string) bool {
	digits, ok := strings.CutPrefix(word, "-")
	return ok && digits != "" && strings.Trim(digits, "0123456789") == ""
}

// parseQuiet is fs.Parse without the usage the flag package prints on every error.
// ParseOperands prints the usage for --help only.
func parseQuiet(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {}
	defer func() { fs.Usage = usage }()
	return fs.Parse(args)
}

// applyEnv sets each flag the command line did not set from its variable.
// It runs after the command line, not before.
// A repeatable flag adds each value.
// So the variable must not be applied when the flag is given.
func (p *Program) applyEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := p.EnvName(f.Name)
		v, ok := os.LookupEnv(name)
		if !ok || given[f.Name] || err != nil {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			if isBool(f) {
				e = errors.New("want true or false") // the flag package says "parse error"
			}
			err = fmt.Errorf("environment %s=%q: %w", name, v, e)
			return
		}
		if p.fromEnv == nil {
			p.fromEnv = map[string]string{}
		}
		p.fromEnv[f.Name] = name
	})
	return err
}

// FromEnv returns the variable that set flag, or "" when the command
// line set it or nothing did.
func (p *Program) FromEnv(flag string) string { return p.fromEnv[flag] }

// ForgetEnv forgets which flags the environment set, for a new run.
func (p *Program) ForgetEnv() { clear(p.fromEnv) }

// NameEnvSources adds the variable to an error message that names a flag
// set from the environment. The operator typed no such flag.
// A flag counts as named as --flag, by its words ("heartbeat timeout"),
// or as itself. setting gives a check's own word for a flag.
func (p *Program) NameEnvSources(msg string, setting func(flag string) string) string {
	lower := strings.ToLower(msg)
	for _, name := range slices.Sorted(maps.Keys(p.fromEnv)) {
		if mentions(msg, "--"+name) || mentions(lower, setting(name)) || mentions(lower, name) {
			msg += " (--" + name + " is set by " + p.fromEnv[name] + " in the environment)"
		}
	}
	return msg
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
