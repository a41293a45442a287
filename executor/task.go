package executor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// Task is one dispatch of a task, as sent in a `task` frame. (ID, Version)
// is the dispatch token. A handler may read every field; it must not keep
// the *Task after Handle returns.
type Task struct {
	ID           uint64            // task_id
	Version      uint64            // version: the dispatch number
	Type         string            // task_type
	Attempt      uint64            // attempt, 1 on the first dispatch
	MaxAttempts  uint64            // max_attempts
	Timeout      time.Duration     // timeout_ms; 0 means none
	TraceID      string            // trace_id
	StateVersion uint64            // state_version when the task was dispatched
	Args         map[string]string // arg.* without the prefix

	exec *Executor
}

// token identifies one dispatch.
type token struct{ id, version uint64 }

func (k token) String() string {
	return strconv.FormatUint(k.id, 10) + "." + strconv.FormatUint(k.version, 10)
}

func (t *Task) token() token { return token{t.ID, t.Version} }

// parseTask reads a `task` frame. m must own its memory (see
// wire.Message.Clone): the task's strings point into it.
func parseTask(m *wire.Message) (*Task, error) {
	t := &Task{}
	var err error
	if t.ID, err = m.Uint("task_id"); err != nil {
		return nil, err
	}
	if t.Version, err = m.Uint("version"); err != nil {
		return nil, err
	}
	var ok bool
	if t.Type, ok = m.Get("task_type"); !ok || t.Type == "" {
		return nil, wire.MissingKey("task_type")
	}
	if t.Attempt, err = m.UintOr("attempt", 0); err != nil {
		return nil, err
	}
	if t.MaxAttempts, err = m.UintOr("max_attempts", 0); err != nil {
		return nil, err
	}
	if t.Timeout, err = m.DurationOr("timeout_ms", 0); err != nil {
		return nil, err
	}
	if t.StateVersion, err = m.UintOr("state_version", 0); err != nil {
		return nil, err
	}
	t.TraceID = m.Value("trace_id")
	t.Args = make(map[string]string)
	for k, v := range m.WithPrefix(wire.PrefixArg) {
		t.Args[k] = v
	}
	return t, nil
}

// Progress sends `progress` for this dispatch: percent is 0 to 100, note is
// optional free text (invalid UTF-8 is replaced). It fails with
// ErrNotConnected while the executor is between connections; progress is
// advisory, so handlers usually ignore its error.
func (t *Task) Progress(percent int, note string) error {
	if percent < 0 || percent > 100 {
		return fmt.Errorf("progress: percent %d not in 0-100", percent)
	}
	s := t.session()
	if s == nil {
		return fmt.Errorf("progress: %w", ErrNotConnected)
	}
	b := wire.Begin(nil, "progress")
	b.Uint("task_id", t.ID)
	b.Uint("version", t.Version)
	b.Uint("percent", uint64(percent))
	if note != "" {
		b.Str("note", strings.ToValidUTF8(note, "\uFFFD"))
	}
	frame, err := b.Finish()
	if err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	return s.send(frame)
}

// State reads the shared state from the main control with `state_get`: the
// values of keys (every key when none is given; keys that are not set are
// left out) and the state_version they belong to. It waits for the reply
// until ctx is done; it fails with ErrNotConnected when there is no
// connection and ErrDisconnected when the connection drops meanwhile, and
// with a *ServerError when the main control answers `error`.
func (t *Task) State(ctx context.Context, keys ...string) (map[string]string, uint64, error) {
	for _, k := range keys {
		if !wire.ValidKey(wire.PrefixState + k) {
			return nil, 0, fmt.Errorf("state_get: bad state key %q", k)
		}
	}
	s := t.session()
	if s == nil {
		return nil, 0, fmt.Errorf("state_get: %w", ErrNotConnected)
	}
	reply, err := s.request(ctx, func(b *wire.Builder) {
		if len(keys) > 0 {
			b.List("keys", keys)
		}
	}, "state_get")
	if err != nil {
		return nil, 0, fmt.Errorf("state_get: %w", err)
	}
	version, err := reply.Uint("state_version")
	if err != nil {
		return nil, 0, fmt.Errorf("state_get: bad reply: %w", err)
	}
	vals := make(map[string]string)
	for k, v := range reply.WithPrefix(wire.PrefixState) {
		vals[k] = v
	}
	return vals, version, nil
}

// session returns the executor's current connection, or nil.
func (t *Task) session() *session {
	if t.exec == nil {
		return nil
	}
	return t.exec.current()
}
