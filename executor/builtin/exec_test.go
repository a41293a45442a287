package builtin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/executor/builtin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allowed are the programs the exec tests may run (/bin/sh only in tests).
var allowed = []string{"/bin/echo", "/usr/bin/printf", "/bin/false", "/bin/sh", "/usr/bin/env", "/bin/cat"}

func mustExist(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s not available: %v", p, err)
		}
	}
}

func runExec(t *testing.T, cfg builtin.ExecConfig, args map[string]string) (executor.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return builtin.Exec(cfg).Handle(ctx, task(args))
}

func TestExec(t *testing.T) {
	mustExist(t, allowed...)
	on := builtin.ExecConfig{Enabled: true, Allow: allowed}
	tests := []struct {
		name string
		args map[string]string
		out  map[string]string // expected out, exactly
		err  string            // expected error text; "" for success
	}{
		{
			name: "argv.N keeps spaces",
			args: map[string]string{"argv.0": "/usr/bin/printf", "argv.1": "[%s]", "argv.2": "a b", "argv.3": "", "argv.4": "c"},
			out:  map[string]string{"stdout": "[a b][][c]", "stderr": "", "exit_code": "0"},
		},
		{
			name: "argv split on white space",
			args: map[string]string{"argv": " /bin/echo  hello\tworld "},
			out:  map[string]string{"stdout": "hello world\n", "stderr": "", "exit_code": "0"},
		},
		{
			name: "argv not split on Unicode spaces",
			args: map[string]string{"argv": "/bin/echo a\u00a0b\u2003c\u3000d\ve"},
			out:  map[string]string{"stdout": "a\u00a0b\u2003c\u3000d e\n", "stderr": "", "exit_code": "0"},
		},
		{
			name: "argv.0 wins over argv",
			args: map[string]string{"argv.0": "/bin/echo", "argv.1": "from argv.N", "argv": "/bin/false"},
			out:  map[string]string{"stdout": "from argv.N\n", "stderr": "", "exit_code": "0"},
		},
		{
			name: "stdin",
			args: map[string]string{"argv": "/bin/cat", "stdin": "line 1\nline=2\n"},
			out:  map[string]string{"stdout": "line 1\nline=2\n", "stderr": "", "exit_code": "0"},
		},
		{
			name: "no stdin reads /dev/null",
			args: map[string]string{"argv": "/bin/cat"},
			out:  map[string]string{"stdout": "", "stderr": "", "exit_code": "0"},
		},
		{
			name: "non-zero exit keeps outputs",
			args: map[string]string{"argv.0": "/bin/sh", "argv.1": "-c", "argv.2": "echo out; echo err >&2; exit 3"},
			out:  map[string]string{"stdout": "out\n", "stderr": "err\n", "exit_code": "3"},
			err:  "exit status 3",
		},
		{
			name: "false",
			args: map[string]string{"argv": "/bin/false"},
			out:  map[string]string{"stdout": "", "stderr": "", "exit_code": "1"},
			err:  "exit status 1",
		},
		{
			name: "killed by a signal",
			args: map[string]string{"argv.0": "/bin/sh", "argv.1": "-c", "argv.2": "kill -TERM $$"},
			out:  map[string]string{"stdout": "", "stderr": "", "exit_code": "-1", "signal": "terminated"},
			err:  "signal: terminated",
		},
		{
			name: "invalid UTF-8 replaced",
			args: map[string]string{"argv.0": "/usr/bin/printf", "argv.1": `\377ok`},
			out:  map[string]string{"stdout": "\uFFFDok", "stderr": "", "exit_code": "0"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := runExec(t, on, tc.args)
			if tc.err == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.Equal(t, tc.err, err.Error())
				assert.False(t, executor.IsPermanent(err), "a failed program is retryable")
			}
			assert.Equal(t, tc.out, res.Out)
		})
	}
}

func TestExec_Refused(t *testing.T) {
	on := builtin.ExecConfig{Enabled: true, Allow: []string{"/bin/echo"}}
	tests := []struct {
		name string
		cfg  builtin.ExecConfig
		args map[string]string
		err  string
	}{
		{"disabled", builtin.ExecConfig{Allow: []string{"/bin/echo"}}, map[string]string{"argv": "/bin/echo hi"},
			"exec is disabled: start the executor with --allow-exec"},
		{"not on the list", on, map[string]string{"argv": "/bin/cat"},
			"exec: /bin/cat is not on the --exec-allow list"},
		{"empty list", builtin.ExecConfig{Enabled: true}, map[string]string{"argv": "/bin/echo"},
			"exec: /bin/echo is not on the --exec-allow list"},
		{"relative path", builtin.ExecConfig{Enabled: true, Allow: []string{"echo", "/bin/echo"}}, map[string]string{"argv": "echo hi"},
			"exec: echo is not on the --exec-allow list (the program must be an absolute path)"},
		{"not exactly on the list", on, map[string]string{"argv": "/bin/../bin/echo hi"},
			"exec: /bin/../bin/echo is not on the --exec-allow list"},
		{"no argv", on, map[string]string{"stdin": "x"},
			"exec: no command: set arg.argv.0, arg.argv.1, ... or arg.argv"},
		{"blank argv", on, map[string]string{"argv": "  "}, "exec: arg.argv is empty"},
		{"gap in argv.N", on, map[string]string{"argv.0": "/bin/echo", "argv.2": "x"},
			"exec: arg.argv.N keys must run from argv.0 without gaps (found 2, consecutive 1)"},
		{"NUL in an argument", on, map[string]string{"argv.0": "/bin/echo", "argv.1": "a", "argv.2": "b\x00c"},
			"exec: argument 2 holds a NUL byte"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := runExec(t, tc.cfg, tc.args)
			require.Error(t, err)
			assert.True(t, executor.IsPermanent(err))
			assert.Equal(t, tc.err, err.Error())
			assert.Empty(t, res.Out)
		})
	}
	t.Run("argument too long for the system", func(t *testing.T) {
		mustExist(t, "/bin/echo")
		// Linux takes at most 128 KiB in one argument: E2BIG, every time.
		_, err := runExec(t, on, map[string]string{"argv.0": "/bin/echo", "argv.1": strings.Repeat("x", 200<<10)})
		require.Error(t, err)
		assert.ErrorIs(t, err, syscall.E2BIG)
		assert.True(t, executor.IsPermanent(err))
	})
	// An allow-listed program that is missing or not executable may be
	// being deployed: retried (builtin/doc.go says so).
	t.Run("missing program is retryable", func(t *testing.T) {
		_, err := runExec(t, builtin.ExecConfig{Enabled: true, Allow: []string{"/nonexistent/prog"}},
			map[string]string{"argv": "/nonexistent/prog"})
		require.Error(t, err)
		assert.False(t, executor.IsPermanent(err))
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
	t.Run("program that cannot be executed is retryable", func(t *testing.T) {
		prog := filepath.Join(t.TempDir(), "prog")
		require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o644)) // not executable
		_, err := runExec(t, builtin.ExecConfig{Enabled: true, Allow: []string{prog}}, map[string]string{"argv": prog})
		require.Error(t, err)
		assert.False(t, executor.IsPermanent(err))
		assert.ErrorIs(t, err, os.ErrPermission)
	})
}

func TestExec_Env(t *testing.T) {
	mustExist(t, "/usr/bin/env")
	t.Setenv("APOLLO11_SECRET", "must not leak")
	cfg := builtin.ExecConfig{Enabled: true, Allow: []string{"/usr/bin/env"}, Env: []string{"EXTRA=1", "LANG=C"}}
	res, err := runExec(t, cfg, map[string]string{"argv": "/usr/bin/env"})
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(res.Out["stdout"]), "\n")
	sort.Strings(lines)
	assert.Equal(t, []string{"EXTRA=1", "LANG=C", "PATH=/usr/local/bin:/usr/bin:/bin"}, lines,
		"only the base environment and ExecConfig.Env; a later entry wins")
}

func TestExec_OutputCap(t *testing.T) {
	mustExist(t, "/bin/sh")
	cfg := builtin.ExecConfig{Enabled: true, Allow: []string{"/bin/sh"}, MaxOutput: 10}
	res, err := runExec(t, cfg, map[string]string{"argv.0": "/bin/sh", "argv.1": "-c",
		"argv.2": "printf 0123456789ABCDEF; printf short >&2; head -c 1000000 /dev/zero"})
	require.NoError(t, err, "a program writing more than the cap is not blocked")
	assert.Equal(t, "0123456789", res.Out["stdout"])
	assert.Equal(t, "true", res.Out["stdout_truncated"])
	assert.Equal(t, "short", res.Out["stderr"])
	assert.NotContains(t, res.Out, "stderr_truncated")

	t.Run("cut inside a UTF-8 sequence", func(t *testing.T) {
		cfg := builtin.ExecConfig{Enabled: true, Allow: []string{"/bin/sh"}, MaxOutput: 4}
		res, err := runExec(t, cfg, map[string]string{"argv.0": "/bin/sh", "argv.1": "-c", "argv.2": "printf 'abcé'"})
		require.NoError(t, err)
		assert.Equal(t, "abc\uFFFD", res.Out["stdout"])
		assert.Equal(t, "true", res.Out["stdout_truncated"])
	})
}

// readPID waits for path to hold a pid.
func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			require.NoError(t, err)
			return pid
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

// gone reports whether pid no longer runs (absent, or a zombie waiting for
// its new parent to reap it).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

func eventuallyGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !gone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still runs after %v", pid, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestExec_CancelKillsProcessGroup(t *testing.T) {
	mustExist(t, "/bin/sh")
	pidFile := filepath.Join(t.TempDir(), "pid")
	cfg := builtin.ExecConfig{Enabled: true, Allow: []string{"/bin/sh"}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ret struct {
		res executor.Result
		err error
	}
	done := make(chan ret, 1)
	go func() {
		res, err := builtin.Exec(cfg).Handle(ctx, task(map[string]string{"argv.0": "/bin/sh", "argv.1": "-c",
			"argv.2": "sleep 30 & echo $! > " + pidFile + "; sleep 30"}))
		done <- ret{res, err}
	}()
	grandchild := readPID(t, pidFile)
	require.False(t, gone(grandchild))
	start := time.Now()
	cancel()
	select {
	case r := <-done:
		assert.ErrorIs(t, r.err, context.Canceled)
		assert.False(t, executor.IsPermanent(r.err))
		assert.Equal(t, "killed", r.res.Out["signal"])
	case <-time.After(5 * time.Second):
		t.Fatal("handler did not return after cancel")
	}
	// Promptly, not after the program's 30 s: the guard, another process,
	// kills the group, which on a loaded host may take a second or two.
	assert.Less(t, time.Since(start), 10*time.Second)
	eventuallyGone(t, grandchild, 5*time.Second)
}

func TestExec_TimeoutKillsProcessGroup(t *testing.T) {
	mustExist(t, "/bin/sh")
	cfg := builtin.ExecConfig{Enabled: true, Allow: []string{"/bin/sh"}}
	ctx, cancel := context.WithTimeoutCause(context.Background(), 100*time.Millisecond, executor.ErrTaskTimeout)
	defer cancel()
	_, err := builtin.Exec(cfg).Handle(ctx, task(map[string]string{"argv.0": "/bin/sh", "argv.1": "-c", "argv.2": "sleep 30"}))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, executor.ErrTaskTimeout, "the cause is kept")
}

func TestExec_LeaderExitKillsGroup(t *testing.T) {
	mustExist(t, "/bin/sh")
	pidFile := filepath.Join(t.TempDir(), "pid")
	cfg := builtin.ExecConfig{Enabled: true, Allow: []string{"/bin/sh"}}
	start := time.Now()
	// The background sleep keeps stdout open: without the group kill the
	// handler would wait for it.
	res, err := runExec(t, cfg, map[string]string{"argv.0": "/bin/sh", "argv.1": "-c",
		"argv.2": "sleep 30 & echo $! > " + pidFile + "; echo leader done"})
	require.NoError(t, err)
	assert.Equal(t, "leader done\n", res.Out["stdout"])
	assert.Less(t, time.Since(start), 20*time.Second, "it waited for the background sleep") // 30 s
	eventuallyGone(t, readPID(t, pidFile), 5*time.Second)
}
