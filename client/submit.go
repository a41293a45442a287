package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/apollo11/apollo11/wire"
)

// Submit sends `submit` and returns the `submitted` reply, once the task
// is durable. A full queue returns an *Error with code queue_full (see
// IsQueueFull).
func (c *Client) Submit(ctx context.Context, req SubmitRequest) (Submitted, error) {
	fill, err := req.fill(false)
	if err != nil {
		return Submitted{}, err
	}
	m, err := c.roundTrip(ctx, wire.KindSubmit, wire.KindSubmitted, req.kind(), fill)
	if err != nil {
		return Submitted{}, err
	}
	return parseSubmitted(m)
}

// SubmitWait submits with wait=true and waits until the task ends: it
// returns the `submitted` reply and the `done` notice. When ctx ends after
// `submitted` arrived, the returned Submitted holds the task's id (the task
// goes on: Query it later).
func (c *Client) SubmitWait(ctx context.Context, req SubmitRequest) (Submitted, Done, error) {
	w, err := c.SubmitWatch(ctx, req)
	if err != nil {
		return Submitted{}, Done{}, err
	}
	defer w.Close()
	d, err := w.Wait(ctx)
	return w.Submitted, d, err
}

// kind is idempotent when the submit has a key: sent twice, the key
// returns the task the first made.
func (r SubmitRequest) kind() kind {
	if r.Key != "" {
		return idempotent
	}
	return oneShot
}

// fill checks r and returns the function that adds its keys to a submit.
// Validate checks what Submit would refuse before sending: Type, Priority,
// MaxAttempts, Timeout, Delay and When. (Args and keys the wire cannot carry are
// found as the frame is built.)
func (r SubmitRequest) Validate() error {
	switch {
	case r.Type == "":
		return errors.New("submit: Type is required")
	case r.Priority < 0 || r.Priority > 9:
		return fmt.Errorf("submit: Priority %d is not 0 to 9", r.Priority)
	case r.MaxAttempts < 0:
		return fmt.Errorf("submit: negative MaxAttempts %d", r.MaxAttempts)
	case r.Timeout < 0 || r.Delay < 0:
		return errors.New("submit: negative Timeout or Delay")
	case r.When != "" && r.When != "failed":
		return fmt.Errorf("submit: When %q is not \"failed\"", r.When)
	case r.When != "" && len(r.DependsOn) == 0:
		return errors.New("submit: When needs DependsOn")
	}
	return nil
}

func (r SubmitRequest) fill(wait bool) (func(*wire.Builder), error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return func(b *wire.Builder) {
		b.Str("task_type", r.Type)
		keys := slices.Sorted(maps.Keys(r.Args))
		for _, k := range keys {
			b.PrefixStr(wire.PrefixArg, k, r.Args[k])
		}
		if r.Priority > 0 {
			b.Uint("priority", uint64(r.Priority))
		}
		if r.MaxAttempts > 0 {
			b.Uint("max_attempts", uint64(r.MaxAttempts))
		}
		if r.Timeout > 0 {
			b.Uint("timeout_ms", millis(r.Timeout))
		}
		if r.Delay > 0 {
			b.Uint("delay_ms", millis(r.Delay))
		}
		for _, f := range textFields {
			if f.req != nil && f.req(&r) != "" {
				b.Str(f.key, f.req(&r))
			}
		}
		if r.Optional {
			b.Bool("optional", true)
		}
		if len(r.DependsOn) > 0 {
			ids := make([]string, len(r.DependsOn))
			for i, id := range r.DependsOn {
				ids[i] = strconv.FormatUint(id, 10)
			}
			b.List("depends_on", ids)
		}
		if wait {
			b.Bool("wait", true)
		}
	}, nil
}

func parseSubmitted(m *wire.Message) (Submitted, error) {
	id, err := m.Uint("task_id")
	if err != nil {
		return Submitted{}, fmt.Errorf("submit: bad submitted: %w", err)
	}
	dup, err := m.BoolOr("duplicate", false)
	if err != nil {
		return Submitted{}, fmt.Errorf("submit: bad submitted: %w", err)
	}
	return Submitted{ID: id, Duplicate: dup}, nil
}

func parseDone(m *wire.Message) (Done, error) {
	id, err := m.Uint("task_id")
	if err != nil {
		return Done{}, fmt.Errorf("submit: bad done: %w", err)
	}
	return Done{ID: id, State: m.Value("state"), Out: prefixed(m, wire.PrefixOut), Error: m.Value("error")}, nil
}

// prefixed returns the fields of m under prefix, without it.
func prefixed(m *wire.Message, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range m.WithPrefix(prefix) {
		out[k] = v
	}
	return out
}
