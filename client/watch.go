package client

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apollo11/apollo11/wire"
)

// Watch follows one task submitted with SubmitWatch until its `done`.
type Watch struct {
	Submitted Submitted
	c         *Client
	cl        *call
	req       string
	stop      chan struct{} // closed by Close
	closeOnce sync.Once

	mu   sync.Mutex // one Wait at a time
	done *Done
	over error // why the watch ended without a done
}

// SubmitWatch submits with wait=true and returns as soon as the task is
// durable (`submitted`); Wait then waits for its end. Call Close when no
// longer interested, so that a `done` arriving later is dropped.
func (c *Client) SubmitWatch(ctx context.Context, req SubmitRequest) (*Watch, error) {
	fill, err := req.fill(true)
	if err != nil {
		return nil, err
	}
	cl, id, err := c.start("submit", fill, true)
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	w := &Watch{c: c, cl: cl, req: id, stop: make(chan struct{})}
	for {
		m, err := c.await(ctx, cl, id)
		if err != nil {
			return nil, fmt.Errorf("submit: %w", err)
		}
		switch m.Type() {
		case "submitted":
			if w.Submitted, err = parseSubmitted(m); err != nil {
				c.forget(id)
				return nil, err
			}
			return w, nil
		case "done": // only if the server sent done first; keep it
			d, err := parseDone(m)
			if err != nil {
				c.forget(id)
				return nil, err
			}
			w.done, w.Submitted.ID = &d, d.ID
			return w, nil
		case "error":
			c.forget(id)
			return nil, fmt.Errorf("submit: %w", wire.ErrorReplyOf(m))
		default:
			c.forget(id)
			return nil, fmt.Errorf("submit: unexpected reply %q", m.Type())
		}
	}
}

// Wait waits until the task ends and returns its `done`. When ctx ends
// first, or Close is called, the task goes on but the watch is over: this
// and every later Wait return that error at once; Query the task instead.
// Concurrent calls wait in turn and get the same outcome.
func (w *Watch) Wait(ctx context.Context) (Done, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done != nil || w.over != nil {
		return w.outcome()
	}
	m, err := w.c.awaitOr(ctx, w.cl, w.req, w.stop)
	if err != nil {
		w.over = fmt.Errorf("wait for task %d: %w", w.Submitted.ID, err)
		return Done{}, w.over
	}
	return w.take(m)
}

func (w *Watch) outcome() (Done, error) {
	if w.done != nil {
		return *w.done, nil
	}
	return Done{}, w.over
}

// ended returns the task's `done` when it has already arrived, without
// waiting.
func (w *Watch) ended() (Done, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done != nil || w.over != nil {
		d, err := w.outcome()
		return d, true, err
	}
	select {
	case m := <-w.cl.ch:
		d, err := w.take(m)
		return d, true, err
	default:
		return Done{}, false, nil
	}
}

// take reads the reply that ends the watch. Called with w.mu held.
func (w *Watch) take(m *wire.Message) (Done, error) {
	w.c.forget(w.req)
	switch m.Type() {
	case "done":
		d, err := parseDone(m)
		if err != nil {
			w.over = err
			return Done{}, err
		}
		w.done = &d
		return d, nil
	case "error":
		w.over = fmt.Errorf("wait for task %d: %w", w.Submitted.ID, wire.ErrorReplyOf(m))
	default:
		w.over = fmt.Errorf("wait for task %d: unexpected reply %q", w.Submitted.ID, m.Type())
	}
	return Done{}, w.over
}

// errWatchClosed ends a Wait when its watch is closed.
var errWatchClosed = errors.New("watch closed")

// Close stops following the task: a Wait under way returns at once.
func (w *Watch) Close() {
	w.closeOnce.Do(func() { close(w.stop) })
	w.c.forget(w.req)
}
