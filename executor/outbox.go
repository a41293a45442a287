package executor

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// minMaxUnsent is the least output an outbox holds for a main control that
// does not read, before it gives up on the connection. The bound is
// max(16 MiB, 4 x max_frame), as the main control's for its own peers
// (docs/protocol.md, "Bounded buffers").
const minMaxUnsent = 16 << 20

// maxUnsent is the bound for a connection with the given max_frame.
func maxUnsent(maxFrame int) int { return max(minMaxUnsent, 4*maxFrame) }

// outbox serializes and batches writes to one connection. Senders queue
// whole frames cheaply, under a mutex, never blocking on the network. They
// wake the outbox's writer goroutine, which writes everything queued in
// one write. Frames queued while it writes leave together in the next one.
// So `started` and `result` after a reconnect leave in one write, and
// under load many frames share one syscall. A write error or timeout
// closes the connection, which ends the session's reader. So does output
// piling up past limit, which only a peer that does not read causes. The
// write deadline alone would let it grow for timeout_ms, which the main
// control chooses.
type outbox struct {
	conn    net.Conn
	timeout time.Duration // write deadline per write
	limit   int           // most unsent bytes; 0 means no bound

	wake chan struct{} // cap 1: something was queued
	quit chan struct{} // closed by close
	done chan struct{} // closed when the writer goroutine exits

	mu      sync.Mutex
	buf     []byte        // queued frames
	writing bool          // the writer holds a batch
	batch   int           // bytes of that batch
	err     error         // first write error; sticky
	idle    chan struct{} // closed and replaced whenever the outbox empties
}

// newOutbox starts the writer goroutine. close stops it.
func newOutbox(conn net.Conn, timeout time.Duration, limit int) *outbox {
	o := &outbox{conn: conn, timeout: timeout, limit: limit, wake: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{}), idle: make(chan struct{})}
	go o.run()
	return o
}

// queue appends whole frames without waking the writer. Past the limit it
// drops everything queued and closes the connection instead.
func (o *outbox) queue(frames ...[]byte) {
	o.mu.Lock()
	if o.err != nil {
		o.mu.Unlock()
		return
	}
	n := 0
	for _, f := range frames {
		n += len(f)
	}
	if unsent := len(o.buf) + o.batch + n; o.limit > 0 && unsent > o.limit {
		o.err = fmt.Errorf("the main control does not read: %d bytes unsent, more than %d", unsent, o.limit)
		o.buf = nil
		o.mu.Unlock()
		o.conn.Close()
		return
	}
	for _, f := range frames {
		o.buf = append(o.buf, f...)
	}
	o.mu.Unlock()
}

// allow raises the limit by n, for the backlog a new connection starts
// with. Results sent again after a reconnect are not the peer's doing.
func (o *outbox) allow(n int) {
	o.mu.Lock()
	if o.limit > 0 {
		o.limit += n
	}
	o.mu.Unlock()
}

// failure returns the error that stopped the outbox, if any. When it
// closed the connection, that is why the session ended.
func (o *outbox) failure() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// flush wakes the writer for what is queued. It returns the connection's
// write error so far, if any. It does not wait for the write.
func (o *outbox) flush() error {
	select {
	case o.wake <- struct{}{}:
	default:
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// send queues frames and flushes.
func (o *outbox) send(frames ...[]byte) error {
	o.queue(frames...)
	return o.flush()
}

// flushAll flushes and waits until everything queued has been written, for
// at most timeout.
func (o *outbox) flushAll(timeout time.Duration) error {
	if err := o.flush(); err != nil {
		return err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		o.mu.Lock()
		empty := len(o.buf) == 0 && !o.writing
		idle, err := o.idle, o.err
		o.mu.Unlock()
		if err != nil || empty {
			return err
		}
		select {
		case <-idle:
		case <-o.done:
			return nil
		case <-t.C:
			return nil
		}
	}
}

// close stops the writer goroutine (after its current write) and waits for
// it. Frames still queued are dropped.
func (o *outbox) close() {
	select {
	case <-o.quit:
	default:
		close(o.quit)
	}
	<-o.done
}

// run is the writer goroutine.
func (o *outbox) run() {
	defer close(o.done)
	var spare []byte
	for {
		select {
		case <-o.wake:
		case <-o.quit:
			return
		}
		for {
			o.mu.Lock()
			if len(o.buf) == 0 || o.err != nil {
				o.writing, o.batch = false, 0
				close(o.idle)
				o.idle = make(chan struct{})
				o.mu.Unlock()
				break
			}
			b := o.buf
			o.buf, o.writing, o.batch = spare[:0], true, len(b)
			o.mu.Unlock()
			err := o.write(b)
			spare = b
			if err != nil {
				o.mu.Lock()
				if o.err == nil { // the first error is why: keep it
					o.err = err
				}
				o.buf = nil
				o.mu.Unlock()
				o.conn.Close()
			}
		}
	}
}

func (o *outbox) write(b []byte) error {
	if o.timeout > 0 {
		if err := o.conn.SetWriteDeadline(time.Now().Add(o.timeout)); err != nil {
			return err
		}
	}
	_, err := o.conn.Write(b)
	return err
}
