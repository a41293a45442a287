package cli

import (
	"flag"
	"fmt"
	"strconv"
	"time"
)

// Positive refuses a flag value at or below 0.
// Config types read a zero as "the default".
// That suits Go callers but not a command line.
func Positive[T int | time.Duration](name string, v T) error {
	if v > 0 {
		return nil
	}
	return fmt.Errorf("--%s %v: must be more than 0", name, v)
}

// FirstErr returns the first non-nil error.
func FirstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// durationValue is a duration flag whose error says what is wanted.
// The flag package's own error says only "parse error".
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

// DurationVar defines a duration flag whose error names the format.
func DurationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationValue)(p), name, usage)
}

// AutoBool is a boolean flag whose default, "auto", is decided at run time.
type AutoBool struct{ set, v bool }

func (a *AutoBool) String() string {
	if a == nil || !a.set {
		return "auto"
	}
	return strconv.FormatBool(a.v)
}

func (a *AutoBool) Set(s string) error {
	if s == "auto" {
		a.set = false
		return nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	a.set, a.v = true, v
	return nil
}

// IsBoolFlag lets the flag stand alone.
func (a *AutoBool) IsBoolFlag() bool { return true }

// On returns the value, or auto() when none was given.
func (a *AutoBool) On(auto func() bool) bool {
	if a.set {
		return a.v
	}
	return auto()
}
