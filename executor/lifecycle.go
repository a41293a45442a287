package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// Validator is implemented by a handler that checks a task's args before
// it runs. Validate is called on the task's worker goroutine before the
// executor sends `started`. It must be quick and must not block. The main
// control's start timeout, 5 s by default, bounds it. An error fails the
// task at once and for good, with `error=invalid_args: <text>`.
type Validator interface {
	Validate(args map[string]string) error
}

// Describer is implemented by a handler that describes itself. Describe
// is called when the handler is configured (New, ChangeTypes). Its
// description goes to the main control at register and with `types`.
// `apollo11 types` shows it (docs/protocol.md section 8.11).
type Describer interface {
	Describe() Description
}

// RollbackHandler is implemented by a handler that can undo its own work.
// Rollback runs instead of Handle for a compensation, a task whose frame
// carries rollback_of. A handler without it gets such tasks in Handle.
// Its contract is Handle's.
type RollbackHandler interface {
	Rollback(ctx context.Context, t *Task) (Result, error)
}

// Arg is one entry of an argument schema. It has an arg name, its kind
// (ArgString, ArgInt, ArgFloat, ArgBool, ArgDuration, ArgJSON) and
// whether a task must give it. A name ending in "*" matches every arg
// that begins with the rest.
type Arg = wire.Arg

// Kinds of an Arg.
const (
	ArgString   = wire.ArgString
	ArgInt      = wire.ArgInt
	ArgFloat    = wire.ArgFloat
	ArgBool     = wire.ArgBool
	ArgDuration = wire.ArgDuration
	ArgJSON     = wire.ArgJSON
)

// Description is what a Describer says of itself. Every field is
// optional. Args, when not empty, is checked before each task runs. A
// required arg missing, or a value that does not parse as its kind, fails
// the task with invalid_args, like Validate. DefaultTimeout bounds a task
// dispatched without a timeout_ms of its own. It is rounded up to whole
// milliseconds. Together, Name, Version and Args take at most 4,000 bytes.
type Description struct {
	Name           string // the handler's name, up to 128 bytes
	Version        string // its version, up to 64 bytes
	Args           []Arg
	DefaultTimeout time.Duration
}

// ErrInvalidArgs is matched (errors.Is) by the failure of a task whose
// args Validate or the described schema refused.
var ErrInvalidArgs = errors.New("invalid_args")

// describe calls h's Describe, when it has one, and checks the result.
func describe(typ string, h Handler) (wire.Description, bool, error) {
	dr, ok := h.(Describer)
	if !ok {
		return wire.Description{}, false, nil
	}
	d := dr.Describe()
	if d.DefaultTimeout < 0 {
		return wire.Description{}, false, configErr("task type %q: negative DefaultTimeout", typ)
	}
	wd := wire.Description{Type: typ, Name: d.Name, Version: d.Version, Args: d.Args,
		TimeoutMs: uint64((d.DefaultTimeout + time.Millisecond - 1) / time.Millisecond)}
	if err := wd.Check(); err != nil {
		return wire.Description{}, false, configErr("%v", err)
	}
	return wd, true, nil
}

// describeAll describes every handler of handlers.
func describeAll(handlers map[string]Handler) (map[string]wire.Description, error) {
	descs := make(map[string]wire.Description)
	for typ, h := range handlers {
		d, ok, err := describe(typ, h)
		if err != nil {
			return nil, err
		}
		if ok {
			descs[typ] = d
		}
	}
	return descs, nil
}

// appendDescriptions writes the descriptions of types into b while the
// frame stays within maxFrame, its keys and one executor's byte bound.
// It returns the types left out.
func appendDescriptions(b *wire.Builder, descs map[string]wire.Description, types []string, maxFrame, reserveKeys, reserveBytes int) (left []string) {
	i, total := 0, 0
	for _, typ := range types {
		d, ok := descs[typ]
		if !ok {
			continue
		}
		// Each key costs its name (at most 24 bytes), "=" and LF. Values
		// are counted escaped.
		keys := wire.DescriptionKeys(d)
		size := keys*26 + wire.EscapedLen(d.Type) + wire.EscapedLen(d.Name) + wire.EscapedLen(d.Version) +
			len(wire.FormatArgs(d.Args)) + 20
		if total+d.Bytes() > wire.MaxExecutorDescBytes || b.Keys()+keys+reserveKeys > wire.MaxKeys ||
			b.Len()+size+reserveBytes > maxFrame {
			left = append(left, typ)
			continue
		}
		wire.AppendDescription(b, i, d)
		total += d.Bytes()
		i++
	}
	return left
}

// logLeftOut warns of descriptions a frame had no room for.
func (e *Executor) logLeftOut(what string, left []string) {
	if len(left) > 0 {
		e.log.Warn("descriptions left out of "+what+": no room in the frame", "task_types", clipList(left))
	}
}

func clipList(l []string) string {
	if len(l) > 8 {
		return strings.Join(l[:8], ",") + fmt.Sprintf(",... %d more", len(l)-8)
	}
	return strings.Join(l, ",")
}

// checkArgs runs the schema check and Validate for r, turning a panic in
// Validate into a permanent failure.
func (e *Executor) checkArgs(r *run) (err error) {
	if probs := wire.CheckArgs(r.schema, r.task.Args); len(probs) > 0 {
		var msgs []string
		for _, p := range probs {
			if !p.Unknown {
				msgs = append(msgs, p.String())
			}
		}
		if len(msgs) > 0 {
			return Permanent(fmt.Errorf("%w: %s", ErrInvalidArgs, strings.Join(msgs, "; ")))
		}
	}
	v, ok := r.handler.(Validator)
	if !ok {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			e.log.LogAttrs(context.Background(), slog.LevelError, "Validate panicked",
				append(taskAttrs(r.task), slog.Any("panic", p), slog.String("stack", string(debug.Stack())))...)
			err = Permanent(fmt.Errorf("panic: %v", p))
		}
	}()
	if verr := v.Validate(r.task.Args); verr != nil {
		return Permanent(fmt.Errorf("%w: %w", ErrInvalidArgs, verr))
	}
	return nil
}

// sendStarted sends the `started` that a run with a check held back, on
// the current connection. activate skips a run until it is started.
func (e *Executor) sendStarted(r *run) {
	e.mu.Lock()
	if r.started || r.cancelled {
		e.mu.Unlock()
		return
	}
	r.started = true
	s := e.cur
	if s != nil {
		s.out.queue(startedFrame(r.task.token()))
	}
	e.mu.Unlock()
	if s != nil {
		_ = s.out.flush() // a write error ends the session; the next one lists the run
	}
}
