package bench

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// maxBatch bounds the bytes one producer writes at once.
const maxBatch = 64 << 10

// producer submits tasks on one client connection, pipelining them.
// A writer goroutine sends batches of submits on the pacer's schedule.
// In closed loop it sends as the window allows.
// A reader goroutine matches replies by req.
// Each submit's req and arg.t carry the Unix nanosecond it was meant to be sent.
// So latencies come straight from the replies and the executors, with no map from id to time.
// In open loop arg.s also carries when the batch was really written.
// So the executors can tell the main control's part of the latency from the harness's.
type producer struct {
	fc       *frameConn
	pacer    Pacer
	deadline time.Time // zero: send pacer.Total() tasks
	window   int64     // closed loop: most tasks not yet finished
	tick     time.Duration
	wait     bool
	taskType string
	payload  string

	sent     atomic.Int64 // submits written
	finished atomic.Int64 // submits answered for good: done (wait), submitted (no wait), or error
	acked    atomic.Int64 // submitted replies
	done     atomic.Int64 // done replies
	errs     atomic.Int64 // error replies
	failed   atomic.Int64 // done with a state other than succeeded
	sending  atomic.Bool  // the writer has not finished
	lastFin  atomic.Int64 // Unix ns of the latest finish
	wake     chan struct{}

	// Owned by the writer goroutine.
	tlSubmit *timeline
	lag      *Histogram // open loop: how late each submit was written
	// Owned by the reader goroutine until it returns.
	ack, doneLat *Histogram
	tlDone       *timeline
	codes        map[string]int64
}

func newProducer(fc *frameConn, p Pacer, cfg *Config, start time.Time) *producer {
	pr := &producer{fc: fc, pacer: p, window: int64(cfg.Window), tick: cfg.PaceTick, wait: cfg.Wait, taskType: cfg.TaskType,
		payload: strings.Repeat("x", cfg.Payload), wake: make(chan struct{}, 1),
		tlSubmit: newTimeline(start), lag: NewHistogram(), ack: NewHistogram(), doneLat: NewHistogram(), tlDone: newTimeline(start),
		codes: make(map[string]int64)}
	if p.Total() < 0 {
		pr.deadline = start.Add(cfg.Duration)
	}
	pr.sending.Store(true)
	return pr
}

// closedLoop reports whether the window, not the clock, paces the writer.
func (p *producer) closedLoop() bool { return p.pacer.rate <= 0 }

// write sends submits until the schedule ends, ctx ends or a write fails.
func (p *producer) write(ctx context.Context) error {
	defer p.sending.Store(false)
	buf := make([]byte, 0, maxBatch+4096)
	var sent int64
	for ctx.Err() == nil {
		now := time.Now()
		if !p.deadline.IsZero() && !now.Before(p.deadline) {
			return nil
		}
		if total := p.pacer.Total(); total >= 0 && sent >= total {
			return nil
		}
		due := p.pacer.Due(now)
		if p.closedLoop() {
			due = min(due, p.finished.Load()+p.window)
		}
		if due <= sent {
			p.idle(ctx, now, sent)
			continue
		}
		buf = buf[:0]
		first := sent
		for sent < due && len(buf) < maxBatch {
			at, sentAt := now, int64(0)
			if !p.closedLoop() {
				at, sentAt = p.pacer.Intended(sent), now.UnixNano()
				p.lag.Record(int64(now.Sub(at)))
			}
			buf = p.appendSubmit(buf, at.UnixNano(), sentAt)
			sent++
		}
		p.sent.Store(sent)
		p.tlSubmit.add(now, uint64(sent-first))
		if err := p.fc.write(buf); err != nil {
			return err
		}
	}
	return nil
}

// idle waits for the next intended send time in open loop.
// In closed loop it waits for a reply to free the window.
func (p *producer) idle(ctx context.Context, now time.Time, sent int64) {
	if wait := p.pacer.start.Sub(now); wait > 0 {
		time.Sleep(wait) // the run has not started
		return
	}
	if p.closedLoop() {
		select {
		case <-p.wake:
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
		return
	}
	d := max(p.pacer.Intended(sent).Sub(now), p.tick)
	if !p.deadline.IsZero() {
		d = min(d, p.deadline.Sub(now))
	}
	if d > 0 {
		time.Sleep(d)
	}
}

// appendSubmit encodes one submit intended for at (Unix ns).
// In open loop it was written at sentAt, where 0 means not sent apart from at.
func (p *producer) appendSubmit(buf []byte, at, sentAt int64) []byte {
	b := wire.Begin(buf, wire.KindSubmit)
	b.IntK(keyReq, at)
	b.StrK(keyType, p.taskType)
	b.IntK(keyArgT, at)
	if sentAt != 0 {
		b.IntK(keyArgS, sentAt)
	}
	if p.payload != "" {
		b.StrK(keyArgP, p.payload)
	}
	if p.wait {
		b.StrK(keyWait, "true")
	}
	out, err := b.Finish()
	if err != nil {
		panic("bench: cannot encode a submit: " + err.Error()) // fixed keys and plain values
	}
	return out
}

// read handles replies until the connection fails or is closed.
func (p *producer) read() error {
	for {
		var fin int64
		err := p.fc.readBatch(func(m *wire.Message) error {
			fin += p.reply(m)
			return nil
		})
		if fin > 0 {
			p.lastFin.Store(time.Now().UnixNano())
			p.finished.Add(fin)
			select {
			case p.wake <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return err
		}
	}
}

// reply accounts for one reply and returns how many submits it finished.
func (p *producer) reply(m *wire.Message) int64 {
	now := time.Now()
	at, _ := wire.ParseInt(m.Value("req"))
	switch m.Kind() {
	case wire.KindSubmitted:
		p.acked.Add(1)
		p.ack.Record(now.UnixNano() - at)
		if !p.wait {
			p.tlDone.add(now, 1)
			return 1
		}
	case wire.KindDone:
		p.done.Add(1)
		p.doneLat.Record(now.UnixNano() - at)
		p.tlDone.add(now, 1)
		if m.Value("state") != "succeeded" {
			p.failed.Add(1)
		}
		return 1
	case wire.KindError:
		p.errs.Add(1)
		p.codes[strings.Clone(m.Value("code"))]++ // the value borrows the read buffer
		if m.Has("req") {
			return 1
		}
	}
	return 0
}
