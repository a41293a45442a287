package executor

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// Task is one dispatch of a task, as sent in a `task` frame. (ID, Version)
// is the dispatch token. A handler may read every field. It must not keep
// the *Task after Handle returns.
type Task struct {
	ID           uint64            // task_id
	Version      uint64            // version: the dispatch number
	Type         string            // task_type
	Attempt      uint64            // attempt, 1 on the first dispatch
	MaxAttempts  uint64            // max_attempts
	Timeout      time.Duration     // timeout_ms; 0 means none (as does one beyond ~292 years)
	TraceID      string            // trace_id
	StateVersion uint64            // state_version when the task was dispatched
	Args         map[string]string // arg.* without the prefix
	// RollbackOf is rollback_of, the task this compensation undoes, or 0.
	// Such a task runs the handler's Rollback when it has one.
	RollbackOf uint64

	exec *Executor
	bad  error // the frame lacks a key or holds a bad value: fail it
}

// token identifies one dispatch.
type token struct{ id, version uint64 }

func (k token) String() string {
	return strconv.FormatUint(k.id, 10) + "." + strconv.FormatUint(k.version, 10)
}

func (t *Task) token() token { return token{t.ID, t.Version} }

// parseTask reads a `task` frame. m must own its memory (see
// wire.Message.Clone), as the task's strings point into it. A frame whose
// dispatch token cannot be read is an error, as it cannot be answered. Any
// other fault leaves the task marked bad. It is started and failed for
// good, so the main control does not dispatch it again and again.
func parseTask(m *wire.Message) (*Task, error) {
	t := &Task{}
	var err error
	if t.ID, err = m.Uint("task_id"); err != nil {
		return nil, err
	}
	if t.Version, err = m.Uint("version"); err != nil {
		return nil, err
	}
	t.Type = m.Value("task_type")
	t.TraceID = m.Value("trace_id")
	t.Args = make(map[string]string)
	for k, v := range m.WithPrefix(wire.PrefixArg) {
		t.Args[k] = v
	}
	t.bad = t.readRequired(m)
	return t, nil
}

// maxTimeoutMs is the longest timeout_ms a time.Duration holds, about 292
// years. A longer one is read as none, which it is in practice.
const maxTimeoutMs = math.MaxInt64 / int64(time.Millisecond)

// readRequired reads the keys spec section 4 gives every task frame.
func (t *Task) readRequired(m *wire.Message) error {
	if t.Type == "" {
		return wire.MissingKey("task_type")
	}
	var err error
	if t.Attempt, err = m.Uint("attempt"); err != nil {
		return err
	}
	if t.MaxAttempts, err = m.Uint("max_attempts"); err != nil {
		return err
	}
	ms, err := m.Uint("timeout_ms")
	if err != nil {
		return err
	}
	if ms <= uint64(maxTimeoutMs) {
		t.Timeout = time.Duration(ms) * time.Millisecond
	}
	if t.StateVersion, err = m.Uint("state_version"); err != nil {
		return err
	}
	if _, ok := m.Get("trace_id"); !ok {
		return wire.MissingKey("trace_id")
	}
	if t.RollbackOf, err = m.UintOr("rollback_of", 0); err != nil {
		return err
	}
	return nil
}

// Progress sends `progress` for this dispatch. percent is 0 to 100. note is
// optional free text, with invalid UTF-8 replaced. A note too long for the
// main control's max_frame is cut on a rune boundary and ends in "...".
// Progress is advisory, and a frame over max_frame would cost the
// connection (spec section 1). It fails with ErrNotConnected while the
// executor is between connections. Handlers usually ignore its error.
func (t *Task) Progress(percent int, note string) error {
	if percent < 0 || percent > 100 {
		return fmt.Errorf("progress: percent %d not in 0-100", percent)
	}
	s := t.session()
	if s == nil {
		return fmt.Errorf("progress: %w", ErrNotConnected)
	}
	b := wire.Begin(nil, wire.KindProgress)
	b.Uint("task_id", t.ID)
	b.Uint("version", t.Version)
	b.Uint("percent", uint64(percent))
	if note != "" {
		room := s.maxFrame - b.Len() - len("\nnote=")
		if note = clipValue(strings.ToValidUTF8(note, "\uFFFD"), room); note != "" {
			b.Str("note", note)
		}
	}
	frame, err := b.Finish()
	if err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	return s.send(frame)
}

// State reads the shared state from the main control with `state_get`. It
// returns the values of keys and the state_version they belong to. No keys
// means every key. Keys that are not set are left out. It waits for the
// reply until ctx is done. Without a connection it fails with
// ErrNotConnected, and with ErrDisconnected when the connection drops
// meanwhile. Too many keys make the request larger than the main control's
// max_frame, and give ErrRequestTooLarge. Ask for fewer at a time. An
// `error` answer gives a *ServerError.
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
	}, wire.KindStateGet)
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

// MaxFrame is the largest frame payload the main control accepts. It is
// the max_frame of its latest welcome. Before the first, and for a Task
// made outside an Executor, it is wire.DefaultMaxFrame. A handler that can
// shorten its outputs uses it to keep its result within the frame. A
// result too large is replaced with a permanent failure. The main
// control's own check is stricter (docs/protocol.md, "Output size check").
// A result sent after a reconnect meets the max_frame of that connection.
func (t *Task) MaxFrame() int {
	if t.exec == nil {
		return wire.DefaultMaxFrame
	}
	return int(t.exec.maxFrame.Load())
}

// session returns the executor's current connection, or nil.
func (t *Task) session() *session {
	if t.exec == nil {
		return nil
	}
	return t.exec.current()
}
