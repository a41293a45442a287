package main_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/internal/testbin"
)

// A main control whose stderr nobody reads (a stalled log collector, a
// full pipe) keeps serving. Its event loop logs under its lock: when each
// log call wrote to stderr, the first full pipe stopped the state
// authority. Here every frame is logged, about 4 MB of it, into a 64 KiB
// pipe no one reads, and every request must still be answered in time.
func TestMaincontrol_StderrNotRead(t *testing.T) {
	bin := testbin.Build(t)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() }) // runs after the process is stopped: cleanups run last first
	addr, httpAddr := testbin.FreeAddr(t), testbin.FreeAddr(t)
	cmd := exec.Command(bin, "maincontrol", "--listen", addr, "--data-dir", "", "--log-level", "debug", "--http-listen", httpAddr)
	cmd.Stderr = w // an *os.File: the child writes the pipe itself, no copying goroutine drains it
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	w.Close() // the child holds the write end; the read end stays open, unread
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	require.NoError(t, testbin.WaitWelcome(addr, 20*time.Second, exited))

	cl, err := client.Dial(context.Background(), addr, client.Options{Name: "logsink-test", Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer cl.Close()
	answered := func(what string, f func(ctx context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, f(ctx), "%s: the main control stopped answering with its stderr unread", what)
	}
	answered("debug on", func(ctx context.Context) error { return cl.Debug(ctx, true) })
	const tasks = 3000
	req := client.SubmitRequest{Type: "echo", Args: map[string]string{"pad": strings.Repeat("p", 1000)}}
	for i := range tasks {
		answered(fmt.Sprintf("submit %d of %d", i+1, tasks), func(ctx context.Context) error {
			_, err := cl.Submit(ctx, req)
			return err
		})
	}
	var st client.Stats
	answered("stats", func(ctx context.Context) (err error) {
		st, err = cl.Stats(ctx)
		return err
	})
	assert.EqualValues(t, tasks, st.Tasks["pending"])
	var metrics string
	answered("metrics", func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/metrics", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		metrics = string(b)
		return err
	})
	assert.Regexp(t, `\napollo11_log_records_dropped_total [1-9][0-9]*\n`, metrics, "the drops are counted where an operator looks")

	// Now read: what the pipe and the buffer held comes out, then the
	// notice of what did not fit, and the graceful stop's last lines.
	var out syncbuf.Buffer
	read := make(chan struct{})
	go func() { defer close(read); _, _ = io.Copy(&out, r) }()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "log records dropped") },
		10*time.Second, 10*time.Millisecond, "no notice of dropped records: was the pipe ever full?")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("no exit within 20 s of SIGTERM")
	}
	assert.Zero(t, cmd.ProcessState.ExitCode())
	<-read // the pipe's write end closed with the process
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	assert.Contains(t, lines[len(lines)-1], "msg=stopped", "the last line reaches stderr once it is read")
	assert.Regexp(t, `level=WARN msg="log records dropped: sink too slow" dropped=[1-9]`, out.String())
}
