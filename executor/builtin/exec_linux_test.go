//go:build linux

package builtin_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
