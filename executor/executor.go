package executor

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apollo11/apollo11/internal/addrlist"
	"github.com/apollo11/apollo11/wire"
)

// Bounds of the stop sequence.
const (
	// byeWait bounds the wait for `bye_ack` after `bye`.
	byeWait = 2 * time.Second
	// cancelGrace is how long a graceful stop waits, after its drain
	// timeout cancelled the remaining handlers, for them to return.
	cancelGrace = time.Second
	// stopWriteTimeout bounds the best-effort `bye` of a hard stop.
	stopWriteTimeout = 200 * time.Millisecond
)

// Executor runs tasks for one main control. Create it with New and start
// it with Run. It is safe for concurrent use.
type Executor struct {
	cfg   Config
	addrs addrlist.List // Addr and Addrs: a leader hint must be one of them
	log   *slog.Logger
	types []string // the task types it takes, sorted; guarded by mu (ChangeTypes)
	// descs are the Describers' descriptions by task type. mu guards them.
	descs map[string]wire.Description

	// maxFrame is the max_frame of the latest registered connection, used to
	// encode results before taking mu.
	maxFrame atomic.Int64

	// hardCtx is cancelled by Stop. It ends the connection loop and every
	// wait of the stop sequence.
	hardCtx    context.Context
	hardCancel context.CancelCauseFunc
	stopOnce   sync.Once
	runCalled  atomic.Bool

	// work hands a run to an idle worker goroutine (unbuffered).
	work chan *run

	mu           sync.Mutex
	runs         map[token]*run     // handlers executing
	unacked      map[token]*outcome // results awaiting result_ack
	unackedBytes int                // their size (see resultOverhead), bounded against a main control that does not ack
	seq          uint64             // completion counter for outcome.seq
	cur          *session           // registered connection, or nil
	draining     bool               // no new tasks
	leaving      bool               // no reconnects
	byeSent      bool
	changed      chan struct{} // closed and replaced when runs or unacked shrink during a drain
}

// New validates cfg, applies its defaults and returns an Executor that is
// not yet connected.
func New(cfg Config) (*Executor, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	descs, err := describeAll(cfg.Handlers)
	if err != nil {
		return nil, err
	}
	e := &Executor{
		cfg:     cfg,
		addrs:   addrlist.New(append([]string{cfg.Addr}, cfg.Addrs...)...),
		descs:   descs,
		log:     cfg.Logger.With("executor_id", cfg.ID),
		types:   cfg.taskTypes(),
		runs:    make(map[token]*run),
		unacked: make(map[token]*outcome),
		changed: make(chan struct{}),
		work:    make(chan *run),
	}
	e.maxFrame.Store(wire.DefaultMaxFrame)
	e.hardCtx, e.hardCancel = context.WithCancelCause(context.Background())
	return e, nil
}

// Run connects to the main control, registers, runs tasks and reconnects
// after failures, until ctx is cancelled or Stop is called. It never gives
// up on the connection by itself.
//
// When ctx is cancelled, Run stops gracefully. It takes no new task. For
// up to Config.DrainTimeout, running handlers finish and their results are
// acknowledged. Then it cancels the rest (cause ErrShutdown) and sends
// `bye reason=shutdown`. It waits up to 2 s for `bye_ack`, closes the
// connection and returns nil. Stop makes Run return quickly, with or
// without a drain in progress. Run may be called once. A second call
// returns ErrAlreadyRunning.
func (e *Executor) Run(ctx context.Context) error {
	if !e.runCalled.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	e.log.Info("executor starting", "addr", e.addrs.String(), "task_types", e.TaskTypes(), "slots", e.cfg.Slots,
		"tls", e.cfg.TLS != nil)
	loopCtx, stopLoop := context.WithCancel(e.hardCtx)
	defer stopLoop()
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		e.connectLoop(loopCtx)
	}()

	select {
	case <-ctx.Done():
	case <-e.hardCtx.Done():
	}
	e.drain()
	e.leave()
	stopLoop()
	<-loopDone
	e.log.Info("executor stopped")
	return nil
}

// Stop is the hard stop. It cancels every running handler at once (cause
// ErrStopped) and sends their results nowhere. It sends a best-effort
// `bye reason=stop` without waiting for its ack, and makes Run return.
// Handlers that ignore their context keep running in the background. Stop
// may be called at any time, more than once, and before or after Run.
func (e *Executor) Stop() {
	e.stopOnce.Do(func() {
		e.mu.Lock()
		e.draining, e.leaving = true, true
		s := e.cur
		bye := s != nil && !e.byeSent
		e.byeSent = true
		e.mu.Unlock()
		if bye {
			s.out.queue(byeFrame("stop"))
			_ = s.out.flushAll(stopWriteTimeout)
		}
		e.cancelRuns(ErrStopped)
		e.hardCancel(ErrStopped)
		e.log.Info("executor hard stop")
	})
}

// drain waits until every handler has returned and every result has been
// acknowledged, or until the drain timeout. After the timeout it cancels
// the remaining handlers and gives them a short grace to return.
func (e *Executor) drain() {
	e.mu.Lock()
	e.draining = true
	running, unacked := len(e.runs), len(e.unacked)
	e.mu.Unlock()
	if e.hardCtx.Err() != nil {
		return
	}
	e.log.Info("draining", "running", running, "unacked", unacked, "drain_timeout", e.cfg.DrainTimeout)
	timer := time.NewTimer(e.cfg.DrainTimeout)
	defer timer.Stop()
	if e.waitIdle(timer.C, true) {
		e.log.Info("drained")
		return
	}
	if e.hardCtx.Err() != nil {
		return
	}
	n := e.cancelRuns(ErrShutdown)
	e.log.Warn("drain timeout: cancelling running handlers", "cancelled", n)
	grace := time.NewTimer(cancelGrace)
	defer grace.Stop()
	e.waitIdle(grace.C, false)
}

// waitIdle waits until no handler runs and, withAcks, no result awaits its
// ack. It returns false on deadline or hard stop.
func (e *Executor) waitIdle(deadline <-chan time.Time, withAcks bool) bool {
	for {
		e.mu.Lock()
		idle := len(e.runs) == 0 && (!withAcks || len(e.unacked) == 0)
		ch := e.changed
		e.mu.Unlock()
		if idle {
			return true
		}
		select {
		case <-ch:
		case <-deadline:
			return false
		case <-e.hardCtx.Done():
			return false
		}
	}
}

// cancelRuns cancels every running handler with cause and returns how many.
func (e *Executor) cancelRuns(cause error) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.runs {
		r.cancel(cause)
	}
	return len(e.runs)
}

// leave stops reconnecting, sends `bye reason=shutdown` on the current
// connection and waits for `bye_ack`, bounded.
func (e *Executor) leave() {
	e.mu.Lock()
	e.leaving = true
	s := e.cur
	bye := s != nil && !e.byeSent
	e.byeSent = true
	lost := len(e.unacked)
	e.mu.Unlock()
	if lost > 0 {
		e.log.Warn("leaving with unacknowledged results; the main control retries those tasks", "unacked", lost)
	}
	if !bye || e.hardCtx.Err() != nil {
		return
	}
	if err := s.send(byeFrame("shutdown")); err != nil {
		e.log.Warn("cannot send bye", "err", err)
		return
	}
	t := time.NewTimer(byeWait)
	defer t.Stop()
	select {
	case <-s.byeAck:
		e.log.Info("bye acknowledged")
	case <-s.done:
		// The main control closes right after bye_ack. Both may be ready,
		// and select picks either.
		select {
		case <-s.byeAck:
			e.log.Info("bye acknowledged")
		default:
		}
	case <-t.C:
		e.log.Warn("no bye_ack", "waited", byeWait)
	case <-e.hardCtx.Done():
	}
}

// current returns the registered connection, or nil.
func (e *Executor) current() *session {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cur
}

func (e *Executor) isLeaving() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leaving
}

// notifyLocked wakes a drain waiting for runs or unacked to shrink. Callers
// hold e.mu.
func (e *Executor) notifyLocked() {
	if e.draining {
		close(e.changed)
		e.changed = make(chan struct{})
	}
}

func byeFrame(reason string) []byte {
	b := wire.Begin(nil, wire.KindBye)
	b.Str("reason", reason)
	f, _ := b.Finish()
	return f
}
