//go:build linux

package builtin

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A guard stands between the executor and each program it runs. It is a
// child subreaper. So every descendant of the program whose parent dies is
// handed to it rather than to init. It gets SIGTERM when the executor dies
// (Pdeathsig), even by kill -9. Then, as when the program ends, it kills
// the program's process group and every descendant handed to it. It
// reports the program's wait status on a pipe. So a program's
// grandchildren die with the executor. Work dispatched again elsewhere
// never runs twice at once.

// sweepLimit bounds a guard's or the executor's killing of what is left.
const sweepLimit = 5 * time.Second

var guardsOn atomic.Bool

func enableGuards() { guardsOn.Store(true) }

// reaper is the executor's side. As a child subreaper it is handed what a
// killed guard leaves behind. It kills that at the end of each task.
var reaper struct {
	sync.Mutex
	on     bool
	guards map[int]struct{} // pids of running guards: never swept
}

// BecomeSubreaper makes the executor a child subreaper, so that programs
// whose guard was killed outright come to it and die when a task ends.
// Call it once, in a process that starts no children but Exec's guards.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("cannot become a child subreaper: %w", err)
	}
	reaper.Lock()
	reaper.on, reaper.guards = true, map[int]struct{}{}
	reaper.Unlock()
	return nil
}

// sweepOrphans kills and reaps the executor's children that are not
// guards. They descend from programs whose guard was killed.
func sweepOrphans() {
	reaper.Lock()
	defer reaper.Unlock()
	if !reaper.on || !guardsOn.Load() {
		return
	}
	for _, pid := range childrenOf(os.Getpid()) {
		if _, ok := reaper.guards[pid]; ok {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		go func() {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}()
	}
}

// guard is a running guard, seen from the executor.
type guard struct {
	cmd    *exec.Cmd
	report *os.File // read end of its status pipe
	mu     sync.Mutex
	hard   *time.Timer // SIGKILL for a guard that ignores stop
	ended  bool
}

// startGuarded starts cmd's program under a guard. cmd is rewritten to
// run this binary in guard mode. The caller holds its OS thread locked
// from here to the wait (see lockThread). The guard's Pdeathsig follows
// the thread that started it.
func startGuarded(cmd *exec.Cmd) (*guard, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("cannot make the guard's status pipe: %w", err)
	}
	cmd.Args = append([]string{os.Args[0], guardFlag}, cmd.Args...)
	cmd.Path = "/proc/self/exe" // this binary, even if replaced on disk since
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	reaper.Lock()
	err = cmd.Start()
	if err == nil && reaper.on {
		reaper.guards[cmd.Process.Pid] = struct{}{}
	}
	reaper.Unlock()
	_ = w.Close()
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	return &guard{cmd: cmd, report: r}, nil
}

// stop asks the guard to kill the program and all it started. A guard
// that has not ended after pipeDrain is killed outright.
func (g *guard) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	g.hard = time.AfterFunc(pipeDrain, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.ended {
			_ = g.cmd.Process.Signal(syscall.SIGKILL)
		}
	})
}

// finish reads the guard's report once it has been waited for, and kills
// whatever a killed guard left to the executor.
func (g *guard) finish(prog string, waitErr error) outcome {
	g.mu.Lock()
	g.ended = true
	if g.hard != nil {
		g.hard.Stop()
	}
	g.mu.Unlock()
	line, _ := io.ReadAll(io.LimitReader(g.report, 4096))
	_ = g.report.Close()
	reaper.Lock()
	delete(reaper.guards, g.cmd.Process.Pid)
	reaper.Unlock()
	sweepOrphans()
	ws, startErr, ok := parseReport(string(line))
	switch {
	case !ok:
		return outcome{err: fmt.Errorf("exec: %s: its guard ended without a report (%v)", prog, waitErr)}
	case startErr != nil:
		return outcome{startErr: startErr}
	}
	return waitOutcome(ws)
}

// runGuard is the guard. It runs argv and reports how it ended on fd 3.
func runGuard(argv []string) int {
	syscall.CloseOnExec(3) // the program must not hold the executor's pipe
	report := os.NewFile(3, "report")
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		_, _ = io.WriteString(report, formatStartErr(fmt.Errorf("exec guard: cannot become a child subreaper: %w", err)))
		return 1
	}
	// This comes before the program starts. So the executor dying from
	// here on is seen.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	// The program's Pdeathsig follows this thread (see lockThread).
	runtime.LockOSThread()
	cmd := &exec.Cmd{Path: argv[0], Args: argv, Env: os.Environ(), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}}
	if err := cmd.Start(); err != nil {
		_, _ = io.WriteString(report, formatStartErr(err))
		return 0
	}
	// Its stdio is the program's now. The executor sees their ends once
	// the program and what it started close them.
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for fd := range 3 {
			_ = unix.Dup2(int(null.Fd()), fd)
		}
		_ = null.Close()
	}
	pgid := cmd.Process.Pid
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-term: // the executor died, or cancels the task
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
	sweepGuarded(pgid)
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	_, _ = io.WriteString(report, formatStatus(ws))
	return 0
}

// sweepGuarded kills the program's process group and every descendant
// handed to the guard, until none is left. Each one killed hands its own
// children to the guard in turn.
func sweepGuarded(pgid int) {
	self, deadline := os.Getpid(), time.Now().Add(sweepLimit)
	for {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		kids := childrenOf(self)
		for _, pid := range kids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for {
			var ws syscall.WaitStatus
			if pid, _ := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 {
				break
			}
		}
		if len(kids) == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// childrenOf lists the processes whose parent is pid. It reads its
// threads' children files where the kernel has them, else all of /proc.
func childrenOf(parent int) []int {
	dir := "/proc/" + strconv.Itoa(parent) + "/task/"
	if tasks, err := os.ReadDir(dir); err == nil {
		var kids []int
		found := true
		for _, task := range tasks {
			b, err := os.ReadFile(dir + task.Name() + "/children")
			if err != nil {
				if os.IsNotExist(err) && !taskGone(dir+task.Name()) {
					found = false // no CONFIG_PROC_CHILDREN
					break
				}
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					kids = append(kids, pid)
				}
			}
		}
		if found {
			return kids
		}
	}
	return scanChildren(parent)
}

// taskGone reports whether a thread's /proc directory has gone.
func taskGone(dir string) bool {
	_, err := os.Stat(dir)
	return err != nil
}

// scanChildren lists the processes whose parent is pid from every
// process's stat file.
func scanChildren(parent int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	var kids []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// The line reads pid (comm) state ppid and so on. comm may hold
		// anything, ")" too.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(parent) {
			kids = append(kids, pid)
		}
	}
	return kids
}
