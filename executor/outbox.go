package executor

import (
	"net"
	"sync"
	"time"
)

// outbox serializes and batches writes to one connection. Frames are queued
// (cheap, under a mutex, never blocking on the network) and written by
// flush. The first flusher writes everything queued, including frames other
// goroutines queue while it writes, so frames queued together leave in one
// write and concurrent senders share syscalls. A write error or timeout
// closes the connection, which ends the session's reader.
type outbox struct {
	conn    net.Conn
	timeout time.Duration // write deadline per write

	mu       sync.Mutex
	buf      []byte // queued frames
	spare    []byte // the other buffer, reused
	flushing bool   // a goroutine is writing
	err      error  // first write error; sticky
}

func newOutbox(conn net.Conn, timeout time.Duration) *outbox {
	return &outbox{conn: conn, timeout: timeout}
}

// queue appends whole frames without writing them.
func (o *outbox) queue(frames ...[]byte) {
	o.mu.Lock()
	if o.err == nil {
		for _, f := range frames {
			o.buf = append(o.buf, f...)
		}
	}
	o.mu.Unlock()
}

// send queues frames and flushes.
func (o *outbox) send(frames ...[]byte) error {
	o.queue(frames...)
	return o.flush()
}

// flush writes what is queued unless another goroutine is already writing
// (that one then writes it too). It returns the connection's write error,
// if any so far.
func (o *outbox) flush() error { return o.flushWithin(o.timeout) }

// flushWithin is flush with a given write deadline.
func (o *outbox) flushWithin(timeout time.Duration) error {
	o.mu.Lock()
	if o.flushing || o.err != nil {
		err := o.err
		o.mu.Unlock()
		return err
	}
	o.flushing = true
	for len(o.buf) > 0 && o.err == nil {
		b := o.buf
		o.buf = o.spare[:0]
		o.mu.Unlock()
		err := o.write(b, timeout)
		o.mu.Lock()
		o.spare = b[:0]
		if err != nil {
			o.err = err
			o.buf = nil
		}
	}
	o.flushing = false
	err := o.err
	o.mu.Unlock()
	if err != nil {
		o.conn.Close()
	}
	return err
}

func (o *outbox) write(b []byte, timeout time.Duration) error {
	if timeout > 0 {
		if err := o.conn.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
			return err
		}
	}
	_, err := o.conn.Write(b)
	return err
}

// flushAll flushes and, when another goroutine is writing, waits until
// everything queued has been written, for at most timeout.
func (o *outbox) flushAll(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := o.flushWithin(time.Until(deadline))
		o.mu.Lock()
		pending := o.flushing || len(o.buf) > 0
		o.mu.Unlock()
		if err != nil || !pending || !time.Now().Before(deadline) {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}
