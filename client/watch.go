package client

import (
	"context"
	"fmt"

	"github.com/apollo11/apollo11/wire"
)

// Watch follows one task submitted with SubmitWatch until its `done`.
type Watch struct {
	Submitted Submitted
	c         *Client
	cl        *call
	req       string
	done      *Done
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
	w := &Watch{c: c, cl: cl, req: id}
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
// first the task goes on, but the watch is over: Query the task instead.
func (w *Watch) Wait(ctx context.Context) (Done, error) {
	if w.done != nil {
		return *w.done, nil
	}
	m, err := w.c.await(ctx, w.cl, w.req)
	if err != nil {
		return Done{}, fmt.Errorf("wait for task %d: %w", w.Submitted.ID, err)
	}
	return w.take(m)
}

// ended returns the task's `done` when it has already arrived, without
// waiting.
func (w *Watch) ended() (Done, bool, error) {
	if w.done != nil {
		return *w.done, true, nil
	}
	select {
	case m := <-w.cl.ch:
		d, err := w.take(m)
		return d, true, err
	default:
		return Done{}, false, nil
	}
}

// take reads the reply that ends the watch.
func (w *Watch) take(m *wire.Message) (Done, error) {
	switch m.Type() {
	case "done":
		d, err := parseDone(m)
		if err != nil {
			return Done{}, err
		}
		w.done = &d
		w.c.forget(w.req)
		return d, nil
	case "error":
		w.c.forget(w.req)
		return Done{}, fmt.Errorf("wait for task %d: %w", w.Submitted.ID, wire.ErrorReplyOf(m))
	}
	w.c.forget(w.req)
	return Done{}, fmt.Errorf("wait for task %d: unexpected reply %q", w.Submitted.ID, m.Type())
}

// Close stops following the task.
func (w *Watch) Close() { w.c.forget(w.req) }
