package main_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/fakemain"
	"github.com/apollo11/apollo11/internal/testbin"
	"github.com/apollo11/apollo11/wire"
)

// silentMainControl completes the handshake of every connection, then
// reads and never answers: a main control that hangs, or a network that
// stalls after connecting.
func silentMainControl(t *testing.T) string {
	return fakeListener(t, func(c net.Conn) {
		_ = fakemain.WriteMsg(c, "welcome", "proto", "1", "max_frame", "1048576", "auth", "none")
		r := wire.NewReader(c, 0)
		if m, err := r.Next(); err == nil {
			_ = fakemain.WriteMsg(c, "hello_ok", "req", m.Value("req"))
		}
		_, _ = io.Copy(io.Discard, c)
	})
}

// muteMainControl accepts connections and never writes: a main control
// that hangs before its welcome.
func muteMainControl(t *testing.T) string {
	return fakeListener(t, nil)
}

// fakeListener accepts connections on a loopback port until the test
// ends, then closes them all; serve, if not nil, runs for each in a
// goroutine of its own.
func fakeListener(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	closed := false
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		closed = true
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed { // accepted as the test ended: no cleanup will close it
				mu.Unlock()
				c.Close()
				return
			}
			conns = append(conns, c)
			mu.Unlock()
			if serve != nil {
				go serve(c)
			}
		}
	}()
	return ln.Addr().String()
}

// A submit sent but never confirmed may have made its task: exit 4 (the
// outcome is unknown), not 2 (nothing submitted), with or without --wait,
// which is bounded by --request-timeout too. Submitting again finds the
// task out only with a --key: without one, the advice is the task lists.
func TestCLI_SubmitNotConfirmed(t *testing.T) {
	bin := testbin.Build(t)
	addr := silentMainControl(t)
	tests := []struct {
		name   string
		args   []string
		advice string
		not    string
	}{
		{name: "no key", advice: "the task may exist, and submitting again may make a second one; `apollo11 list --addr " + addr +
			" --state pending` (or another --state) lists the tasks. With --key, a retry with the same key returns the task instead",
			not: "submit again with the same --key"},
		{name: "no key, wait", args: []string{"--wait"}, advice: "`apollo11 list --addr " + addr + " --state pending`",
			not: "submit again with the same --key"},
		{name: "key", args: []string{"--key", "k1"}, advice: "the task may exist; submit again with the same --key to find out"},
		{name: "key, wait", args: []string{"--key", "k1", "--wait"}, advice: "submit again with the same --key to find out"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"submit", "--type", "echo", "--request-timeout", "300ms"}, tc.args...)
			start := time.Now()
			out, errOut, code := cli(t, bin, addr, args...)
			assert.Equal(t, 4, code, errOut)
			assert.Less(t, time.Since(start), 10*time.Second, "bounded by --request-timeout")
			assert.Contains(t, errOut, "the submit was sent but not confirmed (no reply within --request-timeout 300ms): ")
			assert.Contains(t, errOut, tc.advice)
			if tc.not != "" {
				assert.NotContains(t, errOut, tc.not)
			}
			assert.Empty(t, out)
		})
	}
	out, _, code := cli(t, bin, addr, "submit", "--type", "echo", "--request-timeout", "300ms", "--json")
	assert.Equal(t, 4, code)
	assert.Contains(t, out, `"outcome": "unknown"`)
}

// Every client command whose request, or handshake, gets no reply says
// that none came within --request-timeout, and its value, once: status
// said only "query: context deadline exceeded", and list alone named the
// flag.
func TestCLI_RequestTimeoutNamed(t *testing.T) {
	bin := testbin.Build(t)
	silent, mute := silentMainControl(t), muteMainControl(t)
	runFile := filepath.Join(t.TempDir(), "p.run.json")
	require.NoError(t, os.WriteFile(runFile, []byte(`{"name":"p","steps":[{"id":"a","task_id":1}]}`), 0o644))
	file := filepath.Join(t.TempDir(), "p.yaml")
	require.NoError(t, os.WriteFile(file, []byte("name: p\nsteps: [{id: a, type: echo}]\n"), 0o644))
	tests := []struct {
		addr string
		args []string
	}{
		{silent, []string{"status", "1"}},
		{silent, []string{"cancel", "1"}},
		{silent, []string{"list", "--state", "pending"}},
		{silent, []string{"list", "--state", "pending", "--all"}},
		{silent, []string{"stats"}},
		{silent, []string{"state"}},
		{silent, []string{"state", "k"}},
		{silent, []string{"debug", "on"}},
		{silent, []string{"pipeline", "status", "--run-file", runFile}},
		{silent, []string{"pipeline", "run", file}}, // its submits had no timeout at all
		{silent, []string{"pipeline", "run", file, "--wait"}},
		{mute, []string{"status", "1"}}, // no welcome: the dial times out
		{mute, []string{"pipeline", "status", "--run-file", runFile}},
	}
	for _, tc := range tests {
		name := strings.NewReplacer(runFile, "F", file, "F").Replace(strings.Join(tc.args, " "))
		if tc.addr == mute {
			name = "no welcome " + name
		}
		t.Run(name, func(t *testing.T) {
			// --addr last: `pipeline status` takes its flags after "status".
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang fails, not blocks
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append(slices.Clone(tc.args), "--request-timeout", "300ms", "--addr", tc.addr)...)
			cmd.Dir = t.TempDir() // where pipeline run would record a run
			var errOut bytes.Buffer
			cmd.Stderr = &errOut
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			require.True(t, ok, "want exit 1, got %v", err)
			assert.Equal(t, 1, ee.ExitCode(), errOut.String())
			assert.Equal(t, 1, strings.Count(errOut.String(), "no reply within --request-timeout 300ms"), errOut.String())
		})
	}
}
