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
	end       chan struct{} // closed once the watch is over (see finish)
	endOnce   sync.Once

	mu        sync.Mutex
	done      *Done
	over      error // why the watch ended without a done
	receiving bool  // a Wait reads the reply; the others wait for end
	lost      bool  // the connection was lost: Wait follows the task by id
	sub       SubmitRequest
}

// SubmitWatch submits with wait=true and returns as soon as the task is
// durable (`submitted`). Wait then waits for its end. Call Close when no
// longer interested, so a `done` arriving later is dropped.
func (c *Client) SubmitWatch(ctx context.Context, req SubmitRequest) (*Watch, error) {
	fill, err := req.fill(true)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("submit: %w", err) // nothing sent
	}
	cl, id, err := c.start(ctx, wire.KindSubmit, fill, req.kind(), true)
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	w := &Watch{c: c, cl: cl, req: id, end: make(chan struct{}), sub: req}
	for {
		m, err := c.await(ctx, cl, id)
		if err != nil {
			return nil, fmt.Errorf("submit: %w", err)
		}
		switch m.Kind() {
		case wire.KindSubmitted:
			if w.Submitted, err = parseSubmitted(m); err != nil {
				c.forget(id)
				return nil, err
			}
			return w, nil
		case wire.KindDone: // only if the server sent done first; keep it
			d, err := parseDone(m)
			if err != nil {
				c.forget(id)
				return nil, err
			}
			w.done, w.Submitted.ID = &d, d.ID
			return w, nil
		case wire.KindError:
			c.forget(id)
			return nil, fmt.Errorf("submit: %w", wire.ErrorReplyOf(m))
		default:
			c.forget(id)
			return nil, fmt.Errorf("submit: unexpected reply %q", m.Type())
		}
	}
}

// Wait waits until the task ends and returns its `done`. When ctx ends
// first, or Close is called, the task goes on but the watch is over. This
// and every later Wait then return that error at once. Query the task
// instead. Concurrent calls share one outcome. The task's end, a caller's
// ctx or Close, whichever comes first, ends the watch for all of them.
// Each still returns as soon as its own ctx ends.
func (w *Watch) Wait(ctx context.Context) (Done, error) {
	w.mu.Lock()
	if w.done != nil || w.over != nil {
		defer w.mu.Unlock()
		return w.outcome()
	}
	if w.receiving {
		// Another Wait reads the reply. Wait for the end it brings, but
		// not past this caller's ctx.
		w.mu.Unlock()
		select {
		case <-w.end:
		case <-ctx.Done():
			w.finish(nil, fmt.Errorf("wait for task %d: %w", w.Submitted.ID, ctx.Err()))
		}
		return w.result()
	}
	w.receiving = true
	lost := w.lost
	w.mu.Unlock()
	var m *wire.Message
	var err error
	if !lost {
		m, err = w.c.awaitOr(ctx, w.cl, w.req, w.end)
		lost = err != nil && w.resumable(err)
	}
	switch {
	case lost:
		w.resume(ctx)
	case err != nil:
		// errWatchClosed means another Wait's ctx, or Close, has ended
		// the watch already. finish keeps that first outcome.
		w.finish(nil, fmt.Errorf("wait for task %d: %w", w.Submitted.ID, err))
	default:
		w.take(m)
	}
	return w.result()
}

// resumable reports whether err is a lost connection the client makes
// again, after which the wait goes on by the task's id.
func (w *Watch) resumable(err error) bool {
	return errors.Is(err, ErrConnectionLost) && !w.c.opts.Reconnect.Off
}

// resume follows the task by its id once its `done` can no longer come,
// as the connection that would carry it was lost. It follows until the
// task ends, ctx ends or the watch is closed.
func (w *Watch) resume(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-w.end:
			cancel()
		case <-ctx.Done():
		}
	}()
	d, err := w.follow(ctx)
	if err != nil {
		w.finish(nil, err)
		return
	}
	w.finish(&d, nil)
}

// follow waits for the task's end after a reconnect. A keyed task still
// running is waited for as before: its submit, sent again, names the same
// task and brings its `done`. Otherwise the task is queried until it ends.
func (w *Watch) follow(ctx context.Context) (Done, error) {
	id := w.Submitted.ID
	if w.sub.Key == "" {
		return w.c.Wait(ctx, id)
	}
	ts, err := w.c.Query(ctx, id)
	switch {
	case err != nil:
		return Done{}, fmt.Errorf("wait for task %d: %w", id, err)
	case ts.State == "succeeded" || ts.State == "failed" || ts.State == "cancelled":
		return Done{ID: ts.ID, State: ts.State, Out: ts.Out, Error: ts.Error}, nil
	}
	// It has not ended, so it is kept, and the key still names it.
	again, err := w.c.SubmitWatch(ctx, w.sub)
	if err != nil {
		return Done{}, fmt.Errorf("wait for task %d: %w", id, err)
	}
	defer again.Close()
	if again.Submitted.ID != id {
		return w.c.Wait(ctx, id) // cannot be; follow by id all the same
	}
	return again.Wait(ctx)
}

func (w *Watch) result() (Done, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.outcome()
}

// outcome returns the watch's end. Called with w.mu held.
func (w *Watch) outcome() (Done, error) {
	if w.done != nil {
		return *w.done, nil
	}
	return Done{}, w.over
}

// Ended returns the task's `done` when it has already arrived, without
// waiting. Its bool says whether the watch is over.
func (w *Watch) Ended() (Done, bool, error) {
	w.mu.Lock()
	if w.done != nil || w.over != nil {
		defer w.mu.Unlock()
		d, err := w.outcome()
		return d, true, err
	}
	w.mu.Unlock()
	select {
	case r := <-w.cl.ch:
		if r.err != nil && w.resumable(r.err) {
			w.mu.Lock()
			w.lost = true // the next Wait follows the task by id
			w.mu.Unlock()
			return Done{}, false, nil
		}
		if r.err != nil {
			w.finish(nil, fmt.Errorf("wait for task %d: %w", w.Submitted.ID, r.err))
		} else {
			w.take(r.m)
		}
		d, err := w.result()
		return d, true, err
	default:
		return Done{}, false, nil
	}
}

// take ends the watch with the reply that ends it.
func (w *Watch) take(m *wire.Message) {
	switch m.Kind() {
	case wire.KindDone:
		d, err := parseDone(m)
		if err != nil {
			w.finish(nil, err)
			return
		}
		w.finish(&d, nil)
	case wire.KindError:
		w.finish(nil, fmt.Errorf("wait for task %d: %w", w.Submitted.ID, wire.ErrorReplyOf(m)))
	default:
		w.finish(nil, fmt.Errorf("wait for task %d: unexpected reply %q", w.Submitted.ID, m.Type()))
	}
}

// finish ends the watch with d or err, unless it has ended already. The
// first end is every Wait's outcome. It stops the reply's routing and
// releases every Wait.
func (w *Watch) finish(d *Done, err error) {
	w.mu.Lock()
	if w.done == nil && w.over == nil {
		w.done, w.over = d, err
	}
	w.mu.Unlock()
	w.c.forget(w.req)
	w.endOnce.Do(func() { close(w.end) })
}

// errWatchClosed ends a Wait when its watch is closed.
var errWatchClosed = errors.New("watch closed")

// Close stops following the task. A Wait under way returns at once.
func (w *Watch) Close() {
	w.finish(nil, fmt.Errorf("wait for task %d: %w", w.Submitted.ID, errWatchClosed))
}
