//go:build linux

package builtin_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/executor/builtin"
)

// An executor killed outright (kill -9, the OOM killer) takes the program
// it started with it (Pdeathsig), rather than leaving it running while the
// main control dispatches the task again.
func TestExec_ProgramDiesWithExecutor(t *testing.T) {
	mustExist(t, "/bin/sh", "/bin/sleep")
	pidFile := filepath.Join(t.TempDir(), "pid")
	// exec keeps the shell's pid, so the pid written is the program's.
	helper := exec.Command(os.Args[0], "-test.run=^$", "--",
		"/bin/sh", "-c", "echo $$ > "+pidFile+"; exec /bin/sleep 60")
	helper.Env = append(os.Environ(), helperEnv+"=1")
	require.NoError(t, helper.Start())
	waited := make(chan struct{})
	go func() {
		_ = helper.Wait()
		close(waited)
	}()
	t.Cleanup(func() {
		_ = helper.Process.Kill()
		<-waited
	})

	program := readPID(t, pidFile)
	require.False(t, gone(program))
	require.NoError(t, helper.Process.Signal(syscall.SIGKILL))
	<-waited
	eventuallyGone(t, program, 5*time.Second)
}

// A program's child that left its process group and session (setsid)
// dies with the task too: once its parent is gone it is handed to the
// guard, a child subreaper, which kills it. The group kill missed it.
func TestExec_CancelKillsEscapedChild(t *testing.T) {
	mustExist(t, "/bin/sh", "/usr/bin/setsid", "/bin/sleep")
	pidFile := filepath.Join(t.TempDir(), "pid")
	cfg := builtin.ExecConfig{Enabled: true, Allow: []string{"/bin/sh"}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := builtin.Exec(cfg).Handle(ctx, task(map[string]string{"argv.0": "/bin/sh", "argv.1": "-c",
			// The pid is written once the child has left: a group kill
			// before its setsid would take it.
			"argv.2": "/usr/bin/setsid /bin/sh -c 'echo $$ > " + pidFile + "; exec /bin/sleep 30' & /bin/sleep 30"}))
		done <- err
	}()
	escapee := readPID(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(escapee, syscall.SIGKILL) })
	require.False(t, gone(escapee))
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(20 * time.Second):
		t.Fatal("handler did not return after cancel")
	}
	eventuallyGone(t, escapee, 5*time.Second)
}
