// The flags that every scenario shares.

package main

import (
	"flag"
	"io"
	"os"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/internal/cli"
)

// commonBenchFlags are the flags every scenario has.
type commonBenchFlags struct {
	addr, binary, tokenFile, fsync, jsonOut string
	mcArgs                                  string
	progress                                cli.AutoBool
}

func (c *commonBenchFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.addr, "addr", "", `main control to load (host:port); "" starts one as a child process`)
	fs.StringVar(&c.binary, "binary", "", "apollo11 binary to start main controls and executors with (default: the one beside this binary, else on PATH)")
	fs.StringVar(&c.mcArgs, "maincontrol-args", "", "more flags for a started main control, space-separated")
	c.registerReport(fs)
	fs.StringVar(&c.tokenFile, "token-file", "", "shared token file, when the main control has auth on")
	fs.StringVar(&c.fsync, "fsync", "off", "for a started main control: off (no data dir), never, batch or always")
}

// registerOwn registers the flags of a scenario that always starts its
// own main control. Scenarios that run it without a data dir (idle,
// failover) get no --fsync, which they would ignore. --addr is registered
// so that it is refused with the reason, not as an unknown flag.
func (c *commonBenchFlags) registerOwn(fs *flag.FlagSet) {
	fs.StringVar(&c.addr, "addr", "", "refused: this scenario starts its own main control")
	fs.StringVar(&c.binary, "binary", "", "apollo11 binary to start main controls and executors with (default: the one beside this binary, else on PATH)")
	fs.StringVar(&c.mcArgs, "maincontrol-args", "", "more flags for a started main control, space-separated")
	c.registerReport(fs)
}

// registerOwnToken adds --token-file for a scenario that starts its own
// main control. That main control then requires the token.
func (c *commonBenchFlags) registerOwnToken(fs *flag.FlagSet) {
	fs.StringVar(&c.tokenFile, "token-file", "", "shared token file: the started main control requires it (auth on), and the run's connections prove it")
}

// registerReport registers only the flags of how a report is shown. It
// serves subcommands that load no main control.
func (c *commonBenchFlags) registerReport(fs *flag.FlagSet) {
	fs.Var(&c.progress, "progress", "draw a progress bar on stderr: --progress=true, =false or =auto (when stderr is a terminal)")
	fs.StringVar(&c.jsonOut, "json", "", `write the report as JSON to this file ("-": stdout, instead of the table)`)
}

func (c *commonBenchFlags) token() ([]byte, error) {
	if c.tokenFile == "" {
		return nil, nil
	}
	return auth.LoadToken(c.tokenFile)
}

func (c *commonBenchFlags) progressTo(stderr io.Writer) io.Writer {
	if c.progress.On(func() bool { return isTerminal(os.Stderr) }) {
		return stderr
	}
	return nil
}

// report writes r as the flags say, as JSON to a file or stdout, or as text.
func (c *commonBenchFlags) report(stdout io.Writer, text, js func(io.Writer) error) error {
	switch c.jsonOut {
	case "":
		return text(stdout)
	case "-":
		return js(stdout)
	}
	f, err := os.Create(c.jsonOut)
	if err != nil {
		return err
	}
	if err := js(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return text(stdout)
}

// isTerminal reports whether f is a terminal, for --progress=auto.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
