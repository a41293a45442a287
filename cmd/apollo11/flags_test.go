package main

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/cli"
	"github.com/apollo11/apollo11/internal/testbin"
	"github.com/apollo11/apollo11/maincontrol"
)

func TestParseFlags_Operands(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		operands bool
		err      string
		json     string
		rest     []string
	}{
		{name: "flags only", args: []string{"--progress=false", "--json", "f"}, json: "f"},
		{name: "bool flag given a separate value", args: []string{"--progress", "false", "--json", "f"},
			err: `unexpected argument "false": this command takes only flags, and a boolean flag takes its value as --flag=false`},
		{name: "stray word", args: []string{"stray"}, err: `unexpected argument "stray"`},
		{name: "operands allowed", args: []string{"--json", "f", "42", "43"}, operands: true, json: "f", rest: []string{"42", "43"}},
		{name: "flags after operands", args: []string{"42", "--json", "f"}, operands: true, json: "f", rest: []string{"42"}},
		{name: "flags between operands", args: []string{"42", "--json=f", "43", "--progress=false"}, operands: true, json: "f",
			rest: []string{"42", "43"}},
		{name: "after -- only operands", args: []string{"42", "--", "--json", "-"}, operands: true, rest: []string{"42", "--json", "-"}},
		{name: "bad flag after an operand", args: []string{"42", "--nope"}, operands: true, err: "flag provided but not defined: -nope"},
		{name: "bad flag", args: []string{"--nope"}, err: "flag provided but not defined: -nope"},
		{name: "negative number operand", args: []string{"-1", "--json", "f", "-22"}, operands: true, json: "f", rest: []string{"-1", "-22"}},
		{name: "negative number as a flag's value", args: []string{"--json", "-5", "7"}, operands: true, json: "-5", rest: []string{"7"}},
		{name: "negative number, no operands", args: []string{"-1"}, err: `unexpected argument "-1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFlagSet("t", "t", io.Discard)
			var progress cli.AutoBool
			fs.Var(&progress, "progress", "")
			jsonOut := fs.String("json", "", "")
			parse := parseFlags
			if tc.operands {
				parse = parseFlagsOperands
			}
			err := parse(fs, tc.args)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.json, *jsonOut)
			assert.Equal(t, len(tc.rest), fs.NArg())
			if tc.rest != nil {
				assert.Equal(t, tc.rest, fs.Args())
			}
		})
	}
}

// An explicit zero would quietly mean the Config's default, a relative
// --exec-allow entry could never match, and exec without --allow-exec
// could only fail: all are refused at startup.
func TestDaemonFlags_Validation(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
		err  string // "": accepted
	}{
		{"maincontrol", nil, ""},
		{"maincontrol", []string{"--max-conns", "0"}, "--max-conns 0: must be more than 0"},
		{"maincontrol", []string{"--max-pending", "-3"}, "--max-pending -3: must be more than 0"},
		{"maincontrol", []string{"--retention", "0"}, "--retention 0s: must be more than 0"},
		{"maincontrol", []string{"--snapshot-interval", "0s"}, "--snapshot-interval 0s: must be more than 0"},
		{"maincontrol", []string{"--max-retrying", "0"}, "--max-retrying 0: want -1 (no cap) or more than 0"},
		{"maincontrol", []string{"--max-retrying", "-2"}, "--max-retrying -2: want -1 (no cap) or more than 0"},
		{"maincontrol", []string{"--max-retrying", "-1"}, ""},
		{"maincontrol", []string{"--max-state-bytes", "0"}, "--max-state-bytes 0: want -1 (no cap) or more than 0"},
		{"maincontrol", []string{"--max-state-bytes", "-2"}, "--max-state-bytes -2: want -1 (no cap) or more than 0"},
		{"maincontrol", []string{"--max-state-bytes", "-1"}, ""},
		{"maincontrol", []string{"--max-pending-bytes", "0"}, "--max-pending-bytes 0: want -1 (no cap) or more than 0"},
		{"maincontrol", []string{"--max-pending-bytes", "-2"}, "--max-pending-bytes -2: want -1 (no cap) or more than 0"},
		{"maincontrol", []string{"--max-pending-bytes", "-1"}, ""},
		{"maincontrol", []string{"--retention-max-bytes", "0"}, "--retention-max-bytes 0: want -1 (no cap) or more than 0"},
		{"maincontrol", []string{"--retention-max-bytes", "-2"}, "--retention-max-bytes -2: want -1 (no cap) or more than 0"},
		{"maincontrol", []string{"--retention-max-bytes", "-1"}, ""},
		{"maincontrol", []string{"--heartbeat-interval", "0"}, ""}, // documented: a third of the timeout
		{"executor", nil, ""},
		{"executor", []string{"--slots", "0"}, "--slots 0: must be more than 0"},
		{"executor", []string{"--drain-timeout", "0s"}, "--drain-timeout 0s: must be more than 0"},
		{"executor", []string{"--exec-allow", "/bin/echo,bin/ls"}, `--exec-allow: "bin/ls" is not an absolute path`},
		{"executor", []string{"--exec-allow", "/bin/echo"}, ""},
		{"executor", []string{"--types", "echo,exec"},
			"--types exec needs --allow-exec (and --exec-allow): without it every exec task sent here would fail"},
		{"executor", []string{"--types", "exec", "--allow-exec", "--exec-allow", "/bin/echo"}, ""},
		{"executor", []string{"--types", "exec", "--allow-exec", "--exec-allow", "/bin/echo,/no/such"}, "--exec-allow: /no/such does not exist"},
		{"executor", []string{"--types", "exec", "--allow-exec", "--exec-allow", "/tmp"}, "--exec-allow: /tmp is a directory, not a program"},
		{"executor", []string{"--types", "exec", "--allow-exec", "--exec-allow", "/etc/passwd"}, "--exec-allow: /etc/passwd is not executable"},
		{"executor", []string{"--types", "echo,,sleep"}, `--types "echo,,sleep": an empty item`},
		{"executor", []string{"--exec-allow", "/bin/echo,"}, `--exec-allow "/bin/echo,": an empty item`},
		{"executor", []string{"--types", "exec", "--allow-exec"},
			"--types exec needs --exec-allow with the programs exec may run: with none, every exec task sent here would fail"},
	} {
		fs := newFlagSet(tc.cmd, tc.cmd, io.Discard)
		var err error
		switch tc.cmd {
		case "maincontrol":
			var f maincontrolFlags
			f.register(fs)
			require.NoError(t, parseFlags(fs, tc.args))
			_, err = f.config(io.Discard)
		case "executor":
			var f executorFlags
			f.register(fs)
			require.NoError(t, parseFlags(fs, tc.args))
			_, err = f.config(slog.New(slog.DiscardHandler))
		}
		if tc.err == "" {
			assert.NoError(t, err, "%s %v", tc.cmd, tc.args)
		} else {
			assert.EqualError(t, err, tc.err, "%s %v", tc.cmd, tc.args)
		}
	}
}

// A value a daemon cannot work with is a bad command line (exit 2), as a
// flag that does not parse is, whether the flag check or the daemon's own
// settings check finds it; a file that cannot be read is not (exit 1).
func TestDaemonFlags_ExitCodes(t *testing.T) {
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"maincontrol", "--fsync", "bogus"}, 2, "unknown fsync mode"},
		{[]string{"maincontrol", "--log-format", "xml"}, 2, "want text or json"},
		{[]string{"maincontrol", "--snapshot-every", "0"}, 2, "must be more than 0"},
		{[]string{"maincontrol", "--heartbeat-interval", "8s"}, 2, "above half of the heartbeat timeout"},
		{[]string{"maincontrol", "--max-frame", "100"}, 2, "max frame 100 outside"},
		{[]string{"maincontrol", "--token-file", "/nonexistent/token"}, 1, "cannot read token file"},
		{[]string{"dev", "--heartbeat-interval", "8s"}, 2, "above half of the heartbeat timeout"},
		{[]string{"executor", "--slots", "0"}, 2, "must be more than 0"},
		{[]string{"executor", "--types", "bogus"}, 2, "unknown built-in task type"},
		{[]string{"executor", "--id", "bad/id"}, 2, `ID "bad/id"`},
		{[]string{"executor", "--log-level", "loud"}, 2, "want debug, info, warn or error"},
		{[]string{"executor", "--token-file", "/nonexistent/token"}, 1, "cannot read token file"},
	}
	for _, tc := range tests {
		args := append(tc.args, "--data-dir", "", "--listen", "127.0.0.1:0")
		if tc.args[0] == "dev" { // its executors could not dial port 0: refused first
			args = append(tc.args, "--data-dir", "", "--listen", testbin.FreeAddr(t))
		}
		if tc.args[0] == "executor" {
			args = append(tc.args, "--connect", "127.0.0.1:1")
		}
		var out, errOut bytes.Buffer
		assert.Equal(t, tc.code, run(args, &out, &errOut), "%v: %s", tc.args, errOut.String())
		assert.Contains(t, errOut.String(), tc.msg, "%v", tc.args)
	}
}

// JSON logs write durations as the flags take them, not as nanoseconds.
func TestLogFlags_JSONDurations(t *testing.T) {
	var b bytes.Buffer
	l, err := (&logFlags{level: "info", format: "json"}).logger(&b)
	require.NoError(t, err)
	l.Info("x", "took", 1500*time.Millisecond, "n", 3)
	assert.Contains(t, b.String(), `"took":"1.5s"`)
	assert.Contains(t, b.String(), `"n":3`)
}

// An error about a value set in the environment names the variable: the
// operator typed no such flag.
func TestFlags_ErrorNamesEnvironment(t *testing.T) {
	t.Setenv("APOLLO11_FSYNC", "bogus")
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"maincontrol", "--data-dir", "", "--listen", "127.0.0.1:0"}, &out, &errOut))
	assert.Contains(t, errOut.String(), `unknown fsync mode "bogus"`)
	assert.Contains(t, errOut.String(), "(--fsync is set by APOLLO11_FSYNC in the environment)")

	errOut.Reset()
	assert.Equal(t, 2, run([]string{"maincontrol", "--fsync=nevr", "--data-dir", "", "--listen", "127.0.0.1:0"}, &out, &errOut))
	assert.Contains(t, errOut.String(), `unknown fsync mode "nevr"`)
	assert.NotContains(t, errOut.String(), "APOLLO11_FSYNC", "the command line set it")

	t.Setenv("APOLLO11_MAX_CONNS", "x")
	errOut.Reset()
	assert.Equal(t, 2, run([]string{"maincontrol"}, &out, &errOut), "a variable that does not parse is a bad command line too")
	assert.Contains(t, errOut.String(), `APOLLO11_MAX_CONNS="x"`)
}

// The byte caps (--max-state-bytes, --max-pending-bytes,
// --retention-max-bytes) reach the core's Config, from the command line
// or their variables, the command line winning.
func TestMaincontrolFlags_ByteCaps(t *testing.T) {
	for _, cap := range []struct {
		flag, env string
		def       int
		got       func(maincontrol.Config) int
	}{
		{"max-state-bytes", "APOLLO11_MAX_STATE_BYTES", 64 << 20, func(c maincontrol.Config) int { return c.Core.MaxStateBytes }},
		{"max-pending-bytes", "APOLLO11_MAX_PENDING_BYTES", 512 << 20, func(c maincontrol.Config) int { return c.Core.MaxPendingBytes }},
		{"retention-max-bytes", "APOLLO11_RETENTION_MAX_BYTES", 256 << 20, func(c maincontrol.Config) int { return c.Core.RetentionMaxBytes }},
	} {
		for _, tc := range []struct {
			name string
			env  string // the variable; "" unset
			args []string
			want int
			err  string
		}{
			{name: "default", want: cap.def},
			{name: "flag", args: []string{"--" + cap.flag, "1000"}, want: 1000},
			{name: "no cap", args: []string{"--" + cap.flag + "=-1"}, want: -1},
			{name: "environment", env: "2048", want: 2048},
			{name: "flag over environment", env: "2048", args: []string{"--" + cap.flag, "4096"}, want: 4096},
			{name: "environment zero", env: "0", err: "--" + cap.flag + " 0: want -1 (no cap) or more than 0"},
			{name: "environment not a number", env: "64MiB", err: "environment " + cap.env + `="64MiB"`},
		} {
			t.Run(cap.flag+"/"+tc.name, func(t *testing.T) {
				if tc.env != "" {
					t.Setenv(cap.env, tc.env)
				}
				fs := newFlagSet("maincontrol", "maincontrol", io.Discard)
				var f maincontrolFlags
				f.register(fs)
				err := parseFlags(fs, tc.args)
				if err == nil {
					var cfg maincontrol.Config
					cfg, err = f.config(io.Discard)
					if err == nil {
						assert.Equal(t, tc.want, cap.got(cfg))
					}
				}
				if tc.err == "" {
					require.NoError(t, err)
				} else {
					require.Error(t, err)
					assert.Contains(t, err.Error(), tc.err)
				}
			})
		}
	}
}

// A client command's operands and flags are checked before it dials: a
// bad command line exits 2 and says what is wrong, even with no main
// control to reach.
func TestClientCommands_BadCommandLines(t *testing.T) {
	nowhere := "127.0.0.1:1" // nothing listens: a dial would fail
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"status"}, "want exactly one task id"},
		{[]string{"status", "abc"}, `"abc" is not a task id`},
		{[]string{"status", "1", "2"}, "want exactly one task id"},
		{[]string{"cancel"}, "want exactly one task id"},
		{[]string{"list"}, "--state is required"},
		{[]string{"list", "--state", "failed", "--limit", "1001"}, "--limit 1001: want 1 to 1000"},
		{[]string{"debug"}, "want on or off"},
		{[]string{"debug", "maybe"}, "want on or off"},
		{[]string{"version", "extra"}, `unexpected argument "extra"`},
		{[]string{"submit"}, "--type is required"},
		{[]string{"submit", "--type", "x", "--max-attempts", "0"}, "--max-attempts 0: must be at least 1"},
		{[]string{"submit", "--type", "x", "--priority", "10"}, "--priority 10 is not 0 to 9"},
		{[]string{"submit", "--type", "x", "--timeout", "-1s"}, "negative --timeout or --delay"},
		{[]string{"submit", "--type", "x", "--wait", "--wait-timeout", "-1s"}, "--wait-timeout -1s: must not be negative"},
		{[]string{"stats", "--request-timeout", "0s"}, "--request-timeout 0s: must be more than 0"},
		{[]string{"submit", "--type", "x", "--request-timeout", "-5s"}, "--request-timeout -5s: must be more than 0"},
		{[]string{"state", "Bad.KEY"}, `"Bad.KEY" is not a state key`},
		{[]string{"state", "a,b"}, `"a,b" is not a state key`},
		{[]string{"list", "--state", "bogus"}, `--state "bogus": want one of waiting, pending`},
		{[]string{"submit", "--type", "x", "--arg", "a=1", "--arg", "a=2"}, `"a" is given twice ("1" and "2")`},
		{[]string{"stats", "--request-timeout", "10"}, "want a duration with a unit, like 15s"},
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(append(tc.args, "--addr", nowhere), &out, &errOut), "%v: %s", tc.args, errOut.String())
		assert.Contains(t, errOut.String(), tc.msg, "%v", tc.args)
		assert.NotContains(t, errOut.String(), "cannot reach", "%v: checked before dialling", tc.args)
	}
}

// The daemons' own settings checks name a value in words ("heartbeat
// interval 8s", "Slots 70000"); the variable that set it is named too.
func TestFlags_SettingsErrorNamesEnvironment(t *testing.T) {
	t.Setenv("APOLLO11_HEARTBEAT_INTERVAL", "8s")
	t.Setenv("APOLLO11_LOG_LEVEL", "warn") // set, but not what is wrong
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"maincontrol", "--data-dir", "", "--listen", "127.0.0.1:0"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "(--heartbeat-interval is set by APOLLO11_HEARTBEAT_INTERVAL in the environment)")
	assert.NotContains(t, errOut.String(), "APOLLO11_LOG_LEVEL")

	t.Setenv("APOLLO11_SLOTS", "70000")
	errOut.Reset()
	assert.Equal(t, 2, run([]string{"executor", "--connect", "127.0.0.1:1"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "--slots 70000: want 1 to 65536")
	assert.Contains(t, errOut.String(), "(--slots is set by APOLLO11_SLOTS in the environment)")
}

// A listen address that cannot work is a bad command line, reported before
// the data dir is opened (a long recovery would otherwise come first).
func TestMaincontrol_BadListenBeforeRecovery(t *testing.T) {
	for _, args := range [][]string{
		{"--listen", "nonsense"},
		{"--listen", "127.0.0.1:1969", "--http-listen", "127.0.0.1:99999"},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(append([]string{"maincontrol", "--data-dir", dir}, args...), &out, &errOut), "%v: %s", args, errOut.String())
		assert.Contains(t, errOut.String(), "listen address", "%v", args)
		assert.NoDirExists(t, dir, "%v: refused before the data dir is made", args)
	}
	t.Setenv("APOLLO11_HTTP_LISTEN", "metrics")
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"maincontrol", "--data-dir", "", "--listen", "127.0.0.1:0"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "(--http-listen is set by APOLLO11_HTTP_LISTEN in the environment)")
	assert.NotContains(t, errOut.String(), "APOLLO11_LISTEN")
}

// A repeatable flag set on the command line is not added to by its
// environment variable: the command line wins, as for every flag.
func TestParseFlags_EnvLosesToRepeatedFlag(t *testing.T) {
	t.Setenv("APOLLO11_ARG", "a=1")
	parse := func(args ...string) map[string]string {
		fs := newFlagSet("t", "t", io.Discard)
		kv := kvFlag{}
		fs.Var(kv, "arg", "")
		require.NoError(t, parseFlags(fs, args))
		return kv
	}
	assert.Equal(t, map[string]string{"b": "2"}, parse("--arg", "b=2"))
	assert.Equal(t, map[string]string{"a": "1"}, parse(), "no --arg: the environment's")
	assert.Equal(t, map[string]string{"b": "2", "c": "3"}, parse("--arg=b=2", "--arg", "c=3"))
}

// --lock-loops keeps each event loop on one OS thread by default; false,
// from the flag or the environment, unlocks them.
func TestMaincontrolFlags_LockLoops(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		args      []string
		unlocked  bool
	}{
		{name: "default"},
		{name: "flag", args: []string{"--lock-loops=false"}, unlocked: true},
		{name: "environment", env: "false", unlocked: true},
		{name: "flag over environment", env: "false", args: []string{"--lock-loops=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if cfg, ok := configCase(t, "APOLLO11_LOCK_LOOPS", tc.env, tc.args, ""); ok {
				assert.Equal(t, tc.unlocked, cfg.UnlockLoops)
			}
		})
	}
}

// The executor refuses at start an allowed program that other users could
// replace: every exec task would run the replacement as its user.
func TestExecutorFlags_ExecAllowWorldWritable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, os.Mkdir(dir, 0o755))
	prog := filepath.Join(dir, "job")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755))
	config := func() error {
		var f executorFlags
		fs := newFlagSet("executor", "executor", io.Discard)
		f.register(fs)
		require.NoError(t, parseFlags(fs, []string{"--types", "exec", "--allow-exec", "--exec-allow", prog}))
		l, err := f.log.logger(io.Discard)
		require.NoError(t, err)
		_, err = f.config(l)
		return err
	}
	require.NoError(t, config())
	require.NoError(t, os.Chmod(dir, 0o777))
	err := config()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--exec-allow: "+prog+" is in "+dir+", which every user may write to (mode 0777)")
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chmod(prog, 0o777))
	err = config()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is writable by every user (mode 0777)")
}
