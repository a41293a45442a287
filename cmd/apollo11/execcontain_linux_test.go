//go:build linux

package main_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// runningPID reports whether pid is a live process: not gone, not a zombie.
func runningPID(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// An executor killed outright takes with it the exec task's program and
// everything the program started: a grandchild in its process group, and
// one that left the group and the session (setsid). Only the program died
// before, by its parent-death signal; its children ran on while the task
// was dispatched again elsewhere, so the work ran twice at once.
func TestExecutorDaemon_KilledTakesGrandchildren(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "job")
	escape := ""
	if _, err := os.Stat("/usr/bin/setsid"); err == nil {
		// The pid is written once it has left the group and the session.
		escape = "/usr/bin/setsid /bin/sh -c 'echo $$ > " + dir + "/escapee.tmp; mv " + dir + "/escapee.tmp " + dir + "/escapee; exec /bin/sleep 600' &\n"
	}
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\n"+
		"echo $$ > "+dir+"/child.tmp; mv "+dir+"/child.tmp "+dir+"/child\n"+
		"/bin/sleep 600 & echo $! > "+dir+"/grandchild.tmp; mv "+dir+"/grandchild.tmp "+dir+"/grandchild\n"+
		escape+"wait\n"), 0o755))

	bin := testbin.Build(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", "")
	ex := startExecutor(t, bin, mc.Addr, "--id", "exec-1", "--types", "exec", "--allow-exec", "--exec-allow", script)
	submitID(t, bin, mc.Addr, "--type", "exec", "--arg", "argv="+script)

	names := []string{"child", "grandchild"}
	if escape != "" {
		names = append(names, "escapee")
	}
	var pids []int
	for _, name := range names {
		var pid int
		require.Eventually(t, func() bool {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return false
			}
			pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
			return err == nil
		}, 20*time.Second, 20*time.Millisecond, "no %s started\n%s", name, ex.Output())
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		require.True(t, runningPID(pid), "%s %d runs", name, pid)
		pids = append(pids, pid)
	}

	require.NoError(t, ex.Cmd.Process.Signal(syscall.SIGKILL))
	_ = ex.Wait(10 * time.Second)
	for i, pid := range pids {
		assert.Eventually(t, func() bool { return !runningPID(pid) }, 10*time.Second, 20*time.Millisecond,
			"the %s %d outlived its executor", names[i], pid)
	}
}
