package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// ExecMode is how a raw executor answers a task.
type ExecMode string

// Raw executor modes.
const (
	// ExecEcho answers every task at once, in one write.
	// It sends started and a succeeded result echoing arg.* as out.*.
	ExecEcho ExecMode = "echo"
	// ExecHold sends started and keeps the task running, listed in every heartbeat.
	// It runs until the main control cancels it or the connection ends.
	ExecHold ExecMode = "hold"
	// ExecNoStart keeps the task dispatched. It never sends started.
	ExecNoStart ExecMode = "nostart"
)

// ParseExecMode checks a mode name.
func ParseExecMode(s string) (ExecMode, error) {
	switch m := ExecMode(s); m {
	case ExecEcho, ExecHold, ExecNoStart:
		return m, nil
	}
	return "", fmt.Errorf("executor mode %q: want echo, hold or nostart", s)
}

// RawExecutor is an executor that speaks the wire protocol directly.
// It has none of the executor library's machinery.
// So it costs the harness as little as possible.
// It registers, heartbeats on the announced interval and answers tasks as its mode says.
// It timestamps every task's arrival.
// arg.t is the Unix time in nanoseconds the task was meant to be submitted.
// A task whose args carry it adds its submit-to-dispatch latency to the executor's histogram.
// arg.s is when the submit was really written.
// A task with it adds its sent-to-dispatch latency to a second histogram.
type RawExecutor struct {
	ID   string
	mode ExecMode
	fc   *frameConn
	hb   time.Duration

	// Owned by the reading goroutine until Run returns.
	dispatch, sentDispatch, sentArrived *Histogram
	tl                                  *timeline
	out                                 []byte

	tasks     atomic.Int64 // tasks received
	lastTask  atomic.Int64 // Unix ns of the latest task
	refused   atomic.Int64 // results answered accepted=false
	errFrames atomic.Int64 // error frames received

	mu      sync.Mutex
	running map[string]struct{} // task_id.version started and held (hold)
	seq     uint64

	// OnTask, if set before Run, is called on the reading goroutine for
	// every task received, with its id and version.
	// The strings borrow from the read buffer, so clone what is kept.
	OnTask func(taskID, version string)
}

// ExecutorOptions configures a raw executor.
type ExecutorOptions struct {
	Addr    string
	ID      string
	Types   []string
	Slots   int
	Mode    ExecMode
	Token   []byte
	TLS     *tls.Config   // nil: plaintext
	Timeout time.Duration // for the handshake; default 10 s
	Start   time.Time     // origin of the per-second timeline
	// BufSize is the read buffer in bytes (default 256 KiB).
	// Idle fleets of thousands of executors use a small one.
	BufSize int
}

// DialExecutor connects and registers a raw executor.
func DialExecutor(o ExecutorOptions) (*RawExecutor, error) {
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Mode == "" {
		o.Mode = ExecEcho
	}
	if o.Slots == 0 {
		o.Slots = 1
	}
	if o.BufSize == 0 {
		o.BufSize = readChunk
	}
	fc, hb, err := dialExecutor(o.Addr, o.TLS, o.Token, o.ID, o.Types, o.Slots, o.Timeout, o.BufSize)
	if err != nil {
		return nil, fmt.Errorf("executor %s: cannot register: %w", o.ID, err)
	}
	if hb <= 0 {
		hb = 5 * time.Second
	}
	start := o.Start
	if start.IsZero() {
		start = time.Now()
	}
	return &RawExecutor{ID: o.ID, mode: o.Mode, fc: fc, hb: hb, dispatch: NewHistogram(), sentDispatch: NewHistogram(), sentArrived: NewHistogram(),
		tl: newTimeline(start), running: make(map[string]struct{})}, nil
}

// Heartbeat returns the interval the main control announced.
func (e *RawExecutor) Heartbeat() time.Duration { return e.hb }

// Tasks returns how many tasks arrived so far.
func (e *RawExecutor) Tasks() int64 { return e.tasks.Load() }

// Run reads and answers until ctx ends or the connection fails.
// It closes the connection when it returns.
// A closed connection after ctx ended is not an error.
func (e *RawExecutor) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { e.fc.c.Close() })
	defer stop()
	// The heartbeats stop with the read loop.
	// Waiting for the next tick's failed write would hold up a broken
	// executor's report of its lost connection by up to a heartbeat interval.
	hctx, stopHB := context.WithCancel(ctx)
	hbDone := make(chan struct{})
	defer func() { stopHB(); <-hbDone }()
	defer e.fc.c.Close()
	go e.heartbeats(hctx, hbDone)
	e.fc.rx = newRxStamper(e.fc.c)
	for {
		err := e.fc.readBatch(e.handle)
		if len(e.out) > 0 {
			if werr := e.fc.write(e.out); werr != nil && err == nil {
				err = werr
			}
			e.out = e.out[:0]
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("executor %s: %w", e.ID, err)
		}
	}
}

// handle answers one frame. It runs on the reading goroutine.
func (e *RawExecutor) handle(m *wire.Message) error {
	switch m.Kind() {
	case wire.KindTask:
		now := time.Now()
		e.tasks.Add(1)
		e.lastTask.Store(now.UnixNano())
		e.tl.add(now, 1)
		if t, ok := wire.ParseInt(m.Value("arg.t")); ok {
			e.dispatch.Record(now.UnixNano() - t)
		}
		if t, ok := wire.ParseInt(m.Value("arg.s")); ok {
			e.sentDispatch.Record(now.UnixNano() - t)
			if !e.fc.arrived.IsZero() {
				e.sentArrived.Record(e.fc.arrived.UnixNano() - t)
			}
		}
		id, ver := m.Value("task_id"), m.Value("version")
		if e.OnTask != nil {
			e.OnTask(id, ver)
		}
		return e.answer(m, id, ver)
	case wire.KindResultAck:
		if m.Value("accepted") != "true" {
			e.refused.Add(1)
		}
	case wire.KindCancel:
		e.mu.Lock()
		delete(e.running, m.Value("task_id")+"."+m.Value("version"))
		e.mu.Unlock()
	case wire.KindError:
		e.errFrames.Add(1)
	}
	return nil
}

// answer appends the frames that answer one task to the pending write.
func (e *RawExecutor) answer(m *wire.Message, id, ver string) error {
	switch e.mode {
	case ExecNoStart:
		return nil // not started, so not listed in running= either
	case ExecHold:
		e.mu.Lock()
		e.running[id+"."+ver] = struct{}{}
		e.mu.Unlock()
	}
	b := wire.Begin(e.out, wire.KindStarted)
	b.StrK(keyTaskID, id)
	b.StrK(keyVersion, ver)
	out, err := b.Finish()
	if err != nil || e.mode != ExecEcho {
		e.out = out
		return err
	}
	b = wire.Begin(out, wire.KindResult)
	b.StrK(keyTaskID, id)
	b.StrK(keyVersion, ver)
	b.StrK(keyStatus, "succeeded")
	for k, v := range m.WithPrefix(wire.PrefixArg) {
		b.PrefixStr(wire.PrefixOut, k, v)
	}
	e.out, err = b.Finish()
	return err
}

var (
	keyTaskID  = wire.MustKey("task_id")
	keyVersion = wire.MustKey("version")
	keyStatus  = wire.MustKey("status")
	keyReq     = wire.MustKey("req")
	keyType    = wire.MustKey("task_type")
	keyArgT    = wire.MustKey("arg.t")
	keyArgP    = wire.MustKey("arg.p")
	keyArgS    = wire.MustKey("arg.s")
	keyWait    = wire.MustKey("wait")
)

// heartbeats sends a heartbeat every announced interval
// until ctx ends or a write fails.
func (e *RawExecutor) heartbeats(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(e.hb)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := e.heartbeat(); err != nil {
			return
		}
	}
}

func (e *RawExecutor) heartbeat() error {
	e.mu.Lock()
	e.seq++
	b := wire.Begin(nil, wire.KindHeartbeat)
	b.Uint("seq", e.seq)
	items := make([]string, 0, len(e.running))
	for k := range e.running {
		items = append(items, k)
	}
	e.mu.Unlock()
	b.List("running", items)
	frame, err := b.Finish()
	if err != nil {
		return err
	}
	return e.fc.write(frame)
}

// Bye sends a graceful leave. The main control answers bye_ack and closes.
func (e *RawExecutor) Bye(reason string) error {
	b := wire.Begin(nil, wire.KindBye)
	b.Str("reason", reason)
	frame, err := b.Finish()
	if err != nil {
		return err
	}
	return e.fc.write(frame)
}

// Close closes the connection abruptly, without a bye.
func (e *RawExecutor) Close() error { return e.fc.c.Close() }
