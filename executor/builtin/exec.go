package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apollo11/apollo11/executor"
)

// DefaultMaxOutput is ExecConfig.MaxOutput's default, 64 KiB per stream.
const DefaultMaxOutput = 64 << 10

// BaseEnv is the whole environment of an exec'd program, before
// ExecConfig.Env.
var BaseEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}

// pipeDrain bounds the wait for a program's output pipes to close after
// its process group was killed. A process that left the group may hold
// them open.
const pipeDrain = 2 * time.Second

// ExecConfig configures Exec.
type ExecConfig struct {
	// Enabled must be true for Exec to run anything (the daemon's
	// --allow-exec).
	Enabled bool
	// Allow lists the programs that may run, as absolute paths. argv[0]
	// must equal one of them exactly (the daemon's --exec-allow).
	Allow []string
	// Env holds extra KEY=value entries added to BaseEnv. A later entry
	// for the same key wins.
	Env []string
	// MaxOutput is how many bytes of stdout, and of stderr, are kept.
	// 0 means DefaultMaxOutput.
	MaxOutput int
}

// Exec returns the handler that runs one program without a shell. The
// package documentation gives the argv convention, the checks and the
// outputs.
func Exec(cfg ExecConfig) executor.Handler {
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	env := append(slices.Clone(BaseEnv), cfg.Env...)
	return &execHandler{cfg: cfg, env: env}
}

type execHandler struct {
	cfg ExecConfig
	env []string
}

var (
	_ executor.Handler   = (*execHandler)(nil)
	_ executor.Describer = (*execHandler)(nil)
)

// Describe gives exec's args: its command line, in one or indexed, and stdin.
func (x *execHandler) Describe() executor.Description {
	return executor.Description{Name: "exec", Version: Version, Args: []executor.Arg{
		{Name: "argv", Kind: executor.ArgString}, {Name: "argv.*", Kind: executor.ArgString},
		{Name: "stdin", Kind: executor.ArgString}}}
}

// Handle checks the command against the configuration and runs it.
func (x *execHandler) Handle(ctx context.Context, t *executor.Task) (executor.Result, error) {
	if !x.cfg.Enabled {
		return executor.Result{}, executor.Permanent(errors.New("exec is disabled: start the executor with --allow-exec"))
	}
	argv, err := argvOf(t.Args)
	if err != nil {
		return executor.Result{}, executor.Permanent(err)
	}
	prog := argv[0]
	if !filepath.IsAbs(prog) {
		return executor.Result{}, executor.Permanent(fmt.Errorf("exec: %s is not on the --exec-allow list (the program must be an absolute path)", prog))
	}
	if !slices.Contains(x.cfg.Allow, prog) {
		return executor.Result{}, executor.Permanent(fmt.Errorf("exec: %s is not on the --exec-allow list", prog))
	}
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			// execve cannot pass it, so every attempt would fail alike.
			return executor.Result{}, executor.Permanent(fmt.Errorf("exec: argument %d holds a NUL byte", i))
		}
	}
	stdin, hasStdin := t.Args["stdin"]
	return x.run(ctx, t, argv, stdin, hasStdin)
}

// run starts argv in its own process group. On Linux the group is killed
// with the executor (see sysProcAttr). run feeds stdin and captures the
// outputs. It kills the group on cancel and after the program exits.
func (x *execHandler) run(ctx context.Context, t *executor.Task, argv []string, stdin string, hasStdin bool) (executor.Result, error) {
	stdout := &cappedBuffer{max: x.cfg.MaxOutput}
	stderr := &cappedBuffer{max: x.cfg.MaxOutput}
	p, err := newPipes(hasStdin)
	if err != nil {
		return executor.Result{}, fmt.Errorf("exec: %w", err)
	}
	defer p.closeAll()
	cmd := &exec.Cmd{
		Path:        argv[0],
		Args:        argv,
		Env:         x.env,
		Stdout:      p.outW,
		Stderr:      p.errW,
		SysProcAttr: sysProcAttr(),
	}
	if hasStdin {
		cmd.Stdin = p.inR // else /dev/null
	}
	unlock := lockThread()
	defer unlock() // after the wait: see lockThread
	var g *guard
	if guardsOn.Load() {
		g, err = startGuarded(cmd)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		return executor.Result{}, startFailed(argv[0], err)
	}
	p.closeChildEnds()
	pgid := cmd.Process.Pid
	killGroup := func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
	stop := killGroup
	if g != nil {
		stop = g.stop // the program has a group of its own, which the guard kills
	}
	stopWatch := context.AfterFunc(ctx, stop)

	copied := p.copyOut(stdout, stderr)
	if hasStdin {
		go func() {
			_, _ = io.WriteString(p.inW, stdin) // EPIPE if the program does not read it all
			p.inW.Close()
		}()
	}
	waitErr := cmd.Wait()
	stopWatch()
	var oc outcome
	if g != nil {
		oc = g.finish(argv[0], waitErr) // it killed what the program left behind
	} else {
		killGroup() // whatever the program left behind dies with it
		oc = directOutcome(argv[0], cmd, waitErr)
	}
	select {
	case <-copied:
	case <-time.After(pipeDrain):
		p.closeReadEnds() // someone outside the group holds the pipes
		<-copied
	}
	if oc.startErr != nil {
		return executor.Result{}, startFailed(argv[0], oc.startErr)
	}
	return result(ctx, t, argv[0], oc, stdout, stderr)
}

// startFailed is the handler's error for a program that did not start.
func startFailed(prog string, err error) error {
	err = fmt.Errorf("exec: cannot start %s: %w", prog, err)
	if errors.Is(err, syscall.E2BIG) {
		return executor.Permanent(err) // the same arguments, the same refusal
	}
	// A missing or non-executable program on the allow list may be
	// being deployed. So it is retried, as the package documentation says.
	return err
}

// directOutcome is the outcome of a program started without a guard.
func directOutcome(prog string, cmd *exec.Cmd, waitErr error) outcome {
	var oc outcome
	if ps := cmd.ProcessState; ps != nil {
		oc.ws, oc.known = ps.Sys().(syscall.WaitStatus)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(waitErr, &ee):
		oc.err = errors.New(ee.Error()) // "exit status N" or "signal: ..."
	case waitErr != nil:
		oc.err = fmt.Errorf("exec: %s: %w", prog, waitErr)
	}
	return oc
}

// result builds the handler's outcome from the finished command. The
// outputs are cut to fit the main control's max_frame. A result too large
// would be replaced with a permanent "result too large". That would lose
// the exit code and the status of a program that ran.
func result(ctx context.Context, t *executor.Task, prog string, oc outcome, stdout, stderr *cappedBuffer) (executor.Result, error) {
	out := map[string]string{}
	if oc.known {
		out["exit_code"] = strconv.Itoa(oc.ws.ExitStatus()) // -1 when a signal ended it
		if oc.ws.Signaled() {
			out["signal"] = oc.ws.Signal().String()
		}
	}
	err := runErr(ctx, prog, oc.err)
	room := outputRoom(t, out, err)
	outText, outCapped := stdout.text()
	errText, errCapped := stderr.text()
	outText, errText, outCut, errCut := fitStreams(outText, errText, room)
	out["stdout"], out["stderr"] = outText, errText
	if outCapped || outCut {
		out["stdout_truncated"] = "true"
	}
	if errCapped || errCut {
		out["stderr_truncated"] = "true"
	}
	return executor.Result{Out: out}, err
}

// runErr is the handler's error for a finished command whose own error
// (exit status, signal) is err.
func runErr(ctx context.Context, prog string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if cause := context.Cause(ctx); cause != nil && cause != cerr {
			return fmt.Errorf("exec: %s killed: %w (%w)", prog, cerr, cause)
		}
		return fmt.Errorf("exec: %s killed: %w", prog, cerr)
	}
	return err
}

// pipes are the program's stdio pipes. The parent keeps the read ends of
// stdout/stderr and the write end of stdin.
type pipes struct {
	outR, outW, errR, errW, inR, inW *os.File
}

func newPipes(withStdin bool) (*pipes, error) {
	p := &pipes{}
	var err error
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("cannot make stdout pipe: %w", err)
	}
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		p.closeAll()
		return nil, fmt.Errorf("cannot make stderr pipe: %w", err)
	}
	if withStdin {
		if p.inR, p.inW, err = os.Pipe(); err != nil {
			p.closeAll()
			return nil, fmt.Errorf("cannot make stdin pipe: %w", err)
		}
	}
	return p, nil
}

// copyOut copies both outputs into their buffers. The channel closes when
// both pipes reached EOF or were closed.
func (p *pipes) copyOut(stdout, stderr io.Writer) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		errDone := make(chan struct{})
		go func() {
			defer close(errDone)
			_, _ = io.Copy(stderr, p.errR)
		}()
		_, _ = io.Copy(stdout, p.outR)
		<-errDone
	}()
	return done
}

// closeChildEnds closes the ends the child inherited, so that EOF arrives
// when the child side is gone.
func (p *pipes) closeChildEnds() {
	closeFiles(p.outW, p.errW, p.inR)
}

func (p *pipes) closeReadEnds() { closeFiles(p.outR, p.errR) }

func (p *pipes) closeAll() { closeFiles(p.outR, p.outW, p.errR, p.errW, p.inR, p.inW) }

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Close() // closing twice returns os.ErrClosed, harmlessly
		}
	}
}
