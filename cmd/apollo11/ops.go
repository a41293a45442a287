package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/wire"
)

// runPause and runResume stop and restart the dispatch of one task type.
func runPause(args []string, stdout, stderr io.Writer) error {
	return pauseCommand("pause", args, stdout)
}

func runResume(args []string, stdout, stderr io.Writer) error {
	return pauseCommand("resume", args, stdout)
}

func pauseCommand(name string, args []string, stdout io.Writer) error {
	check := func(fs *flag.FlagSet) error {
		if fs.NArg() != 1 || fs.Arg(0) == "" {
			return fmt.Errorf("want exactly one task type")
		}
		return nil
	}
	return clientCommand(name, name+" [flags] TASK_TYPE", true, args, stdout, nil, check,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			ctx, cancel := cf.ctx()
			defer cancel()
			typ := fs.Arg(0)
			op := cl.Pause
			if name == "resume" {
				op = cl.Resume
			}
			changed, err := op(ctx, typ)
			if err != nil {
				return err
			}
			if cf.asJSON {
				return printJSON(stdout, map[string]any{"task_type": typ, name + "d": true, "changed": changed})
			}
			state := "paused"
			if name == "resume" {
				state = "not paused"
			}
			if !changed {
				_, err = fmt.Fprintf(stdout, "task type %s was already %s\n", shown(typ), state)
				return err
			}
			_, err = fmt.Fprintf(stdout, "task type %s %sd\n", shown(typ), name)
			return err
		})
}

// ifVersionFlag is --if-version, a state_version or unset.
type ifVersionFlag struct {
	v   uint64
	set bool
}

func (f *ifVersionFlag) String() string {
	if !f.set {
		return ""
	}
	return strconv.FormatUint(f.v, 10)
}

func (f *ifVersionFlag) Set(s string) error {
	v, ok := wire.ParseUint(s)
	if !ok {
		return fmt.Errorf("want a state_version (a number), got %q", s)
	}
	f.v, f.set = v, true
	return nil
}

// runStateSet and runStateDel repair the shared state by hand.
func runStateSet(args []string, stdout, stderr io.Writer) error {
	return stateFixCommand("state-set", "state-set [flags] KEY VALUE", 2, args, stdout)
}

func runStateDel(args []string, stdout, stderr io.Writer) error {
	return stateFixCommand("state-del", "state-del [flags] KEY", 1, args, stdout)
}

func stateFixCommand(name, synopsis string, words int, args []string, stdout io.Writer) error {
	var ifVersion ifVersionFlag
	extra := func(fs *flag.FlagSet) {
		fs.Var(&ifVersion, "if-version", "change only while the shared state's state_version is this (compare and set); a mismatch exits 1 naming the current one")
	}
	check := func(fs *flag.FlagSet) error {
		if fs.NArg() != words {
			return fmt.Errorf("want %d words: %s", words, synopsis)
		}
		if !wire.ValidKey(wire.PrefixStateSet + fs.Arg(0)) {
			return fmt.Errorf("%q is not a state key (1 to 54 bytes of a-z 0-9 _ . -)", fs.Arg(0))
		}
		return nil
	}
	return clientCommand(name, synopsis, true, args, stdout, extra, check,
		func(fs *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			ctx, cancel := cf.ctx()
			defer cancel()
			key := fs.Arg(0)
			var ch client.StateChange
			var err error
			switch {
			case words == 2 && ifVersion.set:
				ch, err = cl.StateSetIf(ctx, key, fs.Arg(1), ifVersion.v)
			case words == 2:
				ch, err = cl.StateSet(ctx, key, fs.Arg(1))
			case ifVersion.set:
				ch, err = cl.StateDelIf(ctx, key, ifVersion.v)
			default:
				ch, err = cl.StateDel(ctx, key)
			}
			if err != nil {
				return err
			}
			if cf.asJSON {
				return printJSON(stdout, ch)
			}
			switch {
			case !ch.Changed:
				_, err = fmt.Fprintf(stdout, "%s was not set; state_version %d\n", key, ch.StateVersion)
			case words == 2:
				_, err = fmt.Fprintf(stdout, "%s set; state_version %d\n", key, ch.StateVersion)
			default:
				_, err = fmt.Fprintf(stdout, "%s deleted; state_version %d\n", key, ch.StateVersion)
			}
			return err
		})
}

// runTypes lists the task types the main control knows, every page.
func runTypes(args []string, stdout, stderr io.Writer) error {
	return clientCommand("types", "types [flags]", false, args, stdout, nil, nil,
		func(_ *flag.FlagSet, cf *clientFlags, cl *client.Client) error {
			types, err := cl.TypeListAll(cf.ctx)
			if err != nil {
				return err
			}
			if cf.asJSON {
				if types == nil {
					types = []client.TypeInfo{}
				}
				return printJSON(stdout, types)
			}
			fmt.Fprintf(stdout, "%-24s %8s %8s %7s %9s %6s %-10s %s\n", "TASK_TYPE", "PENDING", "RUNNING", "PAUSED",
				"EXECUTORS", "SLOTS", "VERSION", "TIMEOUT")
			for _, t := range types {
				paused := "no"
				if t.Paused {
					paused = "yes"
				}
				fmt.Fprintf(stdout, "%-24s %8d %8d %7s %9d %6d %-10s %s\n", shown(t.Name), t.Pending, t.Running, paused,
					t.Executors, t.Slots, orDash(shown(t.Version)), orDash(timeoutText(t.TimeoutMs)))
				if line := describedLine(t); line != "" {
					fmt.Fprintln(stdout, line)
				}
			}
			return nil
		})
}

// describedLine is the indented line under a type its handler describes.
// It holds the handler's name and its argument schema.
func describedLine(t client.TypeInfo) string {
	var parts []string
	if t.Handler != "" {
		parts = append(parts, "handler "+shown(t.Handler))
	}
	if len(t.Args) > 0 {
		parts = append(parts, "args "+wire.FormatArgs(t.Args))
	}
	if t.DescriptionCut {
		parts = append(parts, "description too large to list")
	}
	if len(parts) == 0 {
		return ""
	}
	return "    " + strings.Join(parts, "  ")
}

func timeoutText(ms uint64) string {
	if ms == 0 {
		return ""
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
