package dashboard

import (
	"context"
	"errors"
	"sync"

	"github.com/apollo11/apollo11/client"
)

// Loopback is an Actor that sends each action as a client request to the
// main control itself. The event loop then handles it as any client's. The
// core checks it, and it is durable before it is confirmed, under the same
// token. Calling the core from an HTTP goroutine could do neither.
type Loopback struct {
	Addr string // the main control's address, as a client dials it
	Opts client.Options

	mu     sync.Mutex
	c      *client.Client
	closed bool
}

// conn returns the connection, dialling it at first use or after a loss.
func (l *Loopback) conn(ctx context.Context) (*client.Client, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, client.ErrClosed
	}
	if l.c == nil {
		c, err := client.Dial(ctx, l.Addr, l.Opts)
		if err != nil {
			return nil, err
		}
		l.c = c
	}
	return l.c, nil
}

// do runs fn on the connection. A lost connection is dropped, so the next
// action dials again. fn is not repeated, since its request may have been
// acted on.
func (l *Loopback) do(ctx context.Context, fn func(*client.Client) error) error {
	c, err := l.conn(ctx)
	if err != nil {
		return err
	}
	err = fn(c)
	if errors.Is(err, client.ErrConnectionLost) || errors.Is(err, client.ErrClosed) {
		l.mu.Lock()
		if l.c == c {
			_ = c.Close()
			l.c = nil
		}
		l.mu.Unlock()
	}
	return err
}

// Cancel sends `cancel`.
func (l *Loopback) Cancel(ctx context.Context, id uint64) error {
	return l.do(ctx, func(c *client.Client) error { return c.Cancel(ctx, id) })
}

// Requeue sends `requeue` with reason, which names who asked for it.
func (l *Loopback) Requeue(ctx context.Context, id uint64, reason string) error {
	return l.do(ctx, func(c *client.Client) error {
		_, err := c.Requeue(ctx, id, client.RequeueOptions{Reason: reason})
		return err
	})
}

// Pause sends `pause`.
func (l *Loopback) Pause(ctx context.Context, taskType string) error {
	return l.do(ctx, func(c *client.Client) error {
		_, err := c.Pause(ctx, taskType)
		return err
	})
}

// Resume sends `resume`.
func (l *Loopback) Resume(ctx context.Context, taskType string) error {
	return l.do(ctx, func(c *client.Client) error {
		_, err := c.Resume(ctx, taskType)
		return err
	})
}

// Close closes the connection. Later actions fail with client.ErrClosed.
func (l *Loopback) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.c != nil {
		_ = l.c.Close()
		l.c = nil
	}
}
