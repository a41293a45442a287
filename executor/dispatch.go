package executor

import (
	"cmp"
	"context"
	"log/slog"
	"slices"

	"github.com/apollo11/apollo11/wire"
)

// handleFrame routes one frame from the main control. It runs on the
// session's reader goroutine. m is valid only during the call.
func (e *Executor) handleFrame(s *session, m *wire.Message) {
	switch m.Kind() {
	case wire.KindTask:
		e.onTask(s, m)
	case wire.KindCancel:
		e.onCancel(s, m)
	case wire.KindResultAck:
		e.onResultAck(s, m)
	case wire.KindPong:
	case wire.KindState, wire.KindTypesOK:
		s.deliver(m)
	case wire.KindError:
		if m.Has("req") {
			s.deliver(m)
			return
		}
		level := slog.LevelWarn
		if wire.Code(m.Value("code")).CloseAfter() {
			level = slog.LevelError
		}
		s.log.Log(context.Background(), level, "error from the main control",
			"code", m.Value("code"), "message", m.Value("message"))
	case wire.KindByeAck:
		s.byeOnce.Do(func() { close(s.byeAck) })
	default:
		s.log.Debug("ignoring frame of unknown type", "type", m.Type())
	}
}

// resultOverhead is what a result awaiting result_ack counts for besides
// its frame. So many small results are bounded too. Together they may not
// pass maxUnsent. A main control may send the next task before it acks
// the last result (spec section 4). One that never acked would otherwise
// make the executor hold every result it ever made.
const resultOverhead = 256

// onTask starts a dispatch, with `started` at once, then the handler on its
// own goroutine. Some tasks are not started. They find no free slot, arrive
// during a drain, or come while too many results await their result_ack.
// The main control takes them back after its start timeout.
func (e *Executor) onTask(s *session, m *wire.Message) {
	t, err := parseTask(m.Clone())
	if err != nil {
		s.log.Error("ignoring bad task frame", "err", err, "frame", clip(m.String()))
		return
	}
	t.exec = e
	tok := t.token()
	e.mu.Lock()
	refused := ""
	switch {
	case e.draining:
		refused = "draining"
	case e.runs[tok] != nil:
		refused = "dispatch already running"
	case e.unacked[tok] != nil:
		// It ran here and its result awaits result_ack. Running it again
		// would send a second, different result for the same dispatch.
		refused = "dispatch already ran; its result awaits result_ack"
	case len(e.runs) >= s.slots:
		refused = "no free slot"
	case e.unackedBytes >= maxUnsent(s.maxFrame):
		refused = "too many results await result_ack"
	}
	if refused != "" {
		e.mu.Unlock()
		s.log.Warn("task not started", "reason", refused, "task_id", t.ID, "version", t.Version,
			"task_type", t.Type, "trace_id", t.TraceID)
		return
	}
	r := newRun(t)
	e.runs[tok] = r
	if r.started {
		s.out.queue(startedFrame(tok))
	}
	e.mu.Unlock()
	_ = s.out.flush() // a write error ends the session; the result is kept for the next one
	e.spawn(r)
}

// onCancel cancels a running dispatch. Its result will not be sent.
func (e *Executor) onCancel(s *session, m *wire.Message) {
	tok, err := tokenOf(m)
	if err != nil {
		s.log.Warn("ignoring bad cancel frame", "err", err)
		return
	}
	e.mu.Lock()
	r := e.runs[tok]
	found := r != nil && !r.cancelled
	if found {
		r.cancelled = true
		r.cancel(ErrCancelled)
	}
	e.mu.Unlock()
	if found {
		s.log.Info("task cancelled by the main control", "task_id", tok.id, "version", tok.version,
			"task_type", r.task.Type, "trace_id", r.task.TraceID)
	} else {
		s.log.Debug("cancel for a dispatch not running here", "task_id", tok.id, "version", tok.version)
	}
}

// onResultAck forgets an acknowledged result. A refused result is logged
// and dropped. It is never sent again.
func (e *Executor) onResultAck(s *session, m *wire.Message) {
	tok, err := tokenOf(m)
	if err != nil {
		s.log.Warn("ignoring bad result_ack frame", "err", err)
		return
	}
	accepted, err := m.BoolOr("accepted", false)
	if err != nil {
		s.log.Warn("bad result_ack accepted value; dropping the result anyway", "err", err)
	}
	e.mu.Lock()
	o := e.unacked[tok]
	if o != nil {
		delete(e.unacked, tok)
		e.unackedBytes -= o.size
	}
	e.notifyLocked()
	e.mu.Unlock()
	switch {
	case o == nil:
		s.log.Debug("result_ack for no pending result", "task_id", tok.id, "version", tok.version)
	case !accepted:
		s.log.Warn("result refused by the main control", "task_id", tok.id, "version", tok.version,
			"status", o.status(), "reason", m.Value("reason"))
	}
}

// activate makes s the current connection. Before anything else is sent on
// it, it queues `started` for every handler still running. Then come
// `started` and `result` for every unacknowledged result, in completion
// order. All leave in one write.
func (e *Executor) activate(s *session) {
	e.mu.Lock()
	var backlog [][]byte
	running := 0
	for _, tok := range sortedTokens(e.runs) {
		if r := e.runs[tok]; !r.cancelled && r.started {
			backlog = append(backlog, startedFrame(tok))
			running++
		}
	}
	pending := make([]*outcome, 0, len(e.unacked))
	for _, o := range e.unacked {
		pending = append(pending, o)
	}
	slices.SortFunc(pending, func(a, b *outcome) int { return cmp.Compare(a.seq, b.seq) })
	for _, o := range pending {
		frame, replaced := o.encode(s.maxFrame)
		if replaced != "" {
			s.log.Warn("result replaced", "task_id", o.tok.id, "version", o.tok.version, "reason", replaced)
		}
		backlog = append(backlog, startedFrame(o.tok), frame)
	}
	size := 0
	for _, f := range backlog {
		size += len(f)
	}
	s.out.allow(size) // the backlog is ours, not a sign that the peer does not read
	s.out.queue(backlog...)
	e.cur = s
	e.maxFrame.Store(int64(s.maxFrame))
	e.mu.Unlock()
	_ = s.out.flush()
	s.log.Info("registered", "addr", s.addr, "heartbeat", s.heartbeat, "timeout", s.timeout,
		"max_frame", s.maxFrame, "slots", s.slots, "running", running, "resent_results", len(pending))
}

// deactivate forgets s after its connection ended.
func (e *Executor) deactivate(s *session) {
	e.mu.Lock()
	if e.cur == s {
		e.cur = nil
	}
	e.mu.Unlock()
}

func startedFrame(tok token) []byte {
	b := wire.Begin(make([]byte, 0, 64), wire.KindStarted)
	b.Uint("task_id", tok.id)
	b.Uint("version", tok.version)
	f, _ := b.Finish()
	return f
}

// tokenOf reads task_id and version.
func tokenOf(m *wire.Message) (token, error) {
	id, err := m.Uint("task_id")
	if err != nil {
		return token{}, err
	}
	v, err := m.Uint("version")
	if err != nil {
		return token{}, err
	}
	return token{id, v}, nil
}

func sortedTokens[V any](m map[token]V) []token {
	toks := make([]token, 0, len(m))
	for k := range m {
		toks = append(toks, k)
	}
	slices.SortFunc(toks, func(a, b token) int {
		if c := cmp.Compare(a.id, b.id); c != 0 {
			return c
		}
		return cmp.Compare(a.version, b.version)
	})
	return toks
}

// clip bounds a frame quoted in a log.
func clip(s string) string {
	if len(s) > 256 {
		return s[:256] + "..."
	}
	return s
}
