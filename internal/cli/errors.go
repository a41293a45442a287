package cli

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// ExitError carries a process exit code through an error.
// It also carries the error to print, if any, and a hint line after it.
type ExitError struct {
	Code  int
	Err   error
	Hint  string
	Usage bool // a bad command line, which a JSON error names "usage"
}

func (e ExitError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

func (e ExitError) Unwrap() error { return e.Err }

// UsageError makes a command-line error exit 2.
// 2 is the usual code for bad usage.
func UsageError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return ExitError{Code: 2, Err: err, Usage: true}
}

// HelpError is UsageError with a line after the error.
// That line says where fs's flags are listed, instead of printing them all.
func (p *Program) HelpError(fs *flag.FlagSet, err error) error {
	return ExitError{Code: 2, Err: err, Hint: "Run " + strings.TrimSpace(p.Name+" "+fs.Name()) + " --help for its flags.", Usage: true}
}

// IsHelpArg reports whether arg asks for help as the flag package takes it.
// Those are -h, -help, --h and --help.
func IsHelpArg(arg string) bool {
	name, ok := strings.CutPrefix(arg, "-")
	name = strings.TrimPrefix(name, "-")
	return ok && (name == "h" || name == "help")
}
