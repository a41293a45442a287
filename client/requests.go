package client

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// Query returns a task's state (`query`). An unknown id returns an *Error
// with code unknown_task.
func (c *Client) Query(ctx context.Context, id uint64) (TaskState, error) {
	m, err := c.roundTrip(ctx, wire.KindQuery, wire.KindTaskState, idempotent, func(b *wire.Builder) { b.Uint("task_id", id) })
	if err != nil {
		return TaskState{}, err
	}
	var ts TaskState
	var errs []error
	num := uintsOf(m, &errs)
	ts.ID, ts.Version = num("task_id"), num("version")
	ts.Attempt, ts.MaxAttempts = num("attempt"), num("max_attempts")
	ts.Created, ts.Updated = unixMilli(num("created_ms")), unixMilli(num("updated_ms"))
	if len(errs) > 0 {
		return TaskState{}, fmt.Errorf("query: bad task_state: %w", errs[0])
	}
	ts.State, ts.Type = m.Value("state"), m.Value("task_type")
	for _, f := range textFields {
		if f.state != nil {
			*f.state(&ts) = m.Value(f.key)
		}
	}
	ts.Out = prefixed(m, wire.PrefixOut)
	if ts.Requeues, err = m.UintOr("requeues", 0); err != nil {
		return TaskState{}, fmt.Errorf("query: bad task_state: %w", err)
	}
	ts.RequeueReason = m.Value("requeue_reason")
	ts.Step = m.Value("step")
	if ts.RunID, err = m.UintOr("run_id", 0); err == nil {
		ts.RollbackOf, err = m.UintOr("rollback_of", 0)
	}
	if err != nil {
		return TaskState{}, fmt.Errorf("query: bad task_state: %w", err)
	}
	if ts.Optional, err = m.BoolOr("optional", false); err != nil {
		return TaskState{}, fmt.Errorf("query: bad task_state: %w", err)
	}
	ts.ProgressNote = m.Value("progress_note")
	for k, dst := range map[string]**uint64{"progress": &ts.Progress, "queued_ms": &ts.QueuedMs, "run_ms": &ts.RunMs} {
		if _, ok := m.Get(k); ok {
			n := num(k)
			*dst = &n
		}
	}
	if len(errs) > 0 {
		return TaskState{}, fmt.Errorf("query: bad task_state: %w", errs[0])
	}
	return ts, nil
}

// uintsOf reads required uint keys of one reply, each error into errs,
// so that a parser reads every key first and checks errs once.
func uintsOf(m *wire.Message, errs *[]error) func(k string) uint64 {
	return func(k string) uint64 {
		n, err := m.Uint(k)
		if err != nil {
			*errs = append(*errs, err)
		}
		return n
	}
}

func unixMilli(ms uint64) time.Time {
	if ms > 1<<62 {
		ms = 1 << 62
	}
	return time.UnixMilli(int64(ms))
}

// Cancel cancels a task (`cancel`). An unknown id returns code
// unknown_task. A task already ended returns code illegal_transition.
func (c *Client) Cancel(ctx context.Context, id uint64) error {
	_, err := c.roundTrip(ctx, wire.KindCancel, wire.KindCancelled, oneShot, func(b *wire.Builder) { b.Uint("task_id", id) })
	return err
}

// List returns one page of the ids of the tasks in state (`list`), in
// ascending order, after the id after. 0 starts from the first. limit 0
// means the main control's default (100). next is 0 on the last page.
// Otherwise pass it as after to get the next page.
func (c *Client) List(ctx context.Context, state string, limit int, after uint64) (ids []uint64, next uint64, err error) {
	if limit < 0 {
		return nil, 0, fmt.Errorf("list: negative limit %d", limit)
	}
	m, err := c.roundTrip(ctx, wire.KindList, wire.KindTasks, idempotent, func(b *wire.Builder) {
		b.Str("state", state)
		addPage(b, limit, after)
	})
	if err != nil {
		return nil, 0, err
	}
	return readPage(m, "list: bad tasks")
}

// addPage adds the paging keys of `list` and `run_list`, leaving out the
// defaults.
func addPage(b *wire.Builder, limit int, after uint64) {
	if limit > 0 {
		b.Uint("limit", uint64(limit))
	}
	if after > 0 {
		b.Uint("after", after)
	}
}

// readPage reads the ids and next of a `tasks` or `runs` reply. what
// starts its errors.
func readPage(m *wire.Message, what string) (ids []uint64, next uint64, err error) {
	items, err := m.List("ids")
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", what, err)
	}
	ids = make([]uint64, len(items))
	for i, it := range items {
		id, ok := wire.ParseUint(it)
		if !ok {
			return nil, 0, fmt.Errorf("%s: id %q", what, it)
		}
		ids[i] = id
	}
	if next, err = m.UintOr("next", 0); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", what, err)
	}
	return ids, next, nil
}

// ListAll returns the ids of every task in state, following `next` from
// page to page, 1,000 ids a page. Tasks change meanwhile, so it is a
// listing over time, not a snapshot.
func (c *Client) ListAll(ctx context.Context, state string) ([]uint64, error) {
	return c.ListAfter(ctx, state, 0)
}

// ListAfter is ListAll from the ids after `after` on.
func (c *Client) ListAfter(ctx context.Context, state string, after uint64) ([]uint64, error) {
	return c.ListWalk(state, 1000, after, func() (context.Context, context.CancelFunc) { return ctx, func() {} })
}

// ListWalk follows `next` from the ids after `after` on, limit ids a
// page. Each page is a request under its own context from pageCtx. That
// allows a timeout per request, where a whole walk of a large table may
// take longer than any one reply should.
func (c *Client) ListWalk(state string, limit int, after uint64, pageCtx func() (context.Context, context.CancelFunc)) ([]uint64, error) {
	all := []uint64{}
	for {
		ctx, cancel := pageCtx()
		ids, next, err := c.List(ctx, state, limit, after)
		cancel()
		if err != nil {
			return all, err
		}
		all = append(all, ids...)
		if next == 0 {
			return all, nil
		}
		if next <= after {
			return all, fmt.Errorf("list: next %d does not advance past %d", next, after)
		}
		after = next
	}
}

// Stats returns the main control's counters (`stats`).
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	m, err := c.roundTrip(ctx, wire.KindStats, wire.KindStats, idempotent, nil)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Tasks: map[string]uint64{}, Extra: map[string]string{}}
	for _, f := range m.Fields {
		var err error
		switch {
		case f.Key == "type" || f.Key == "req":
		case strings.HasPrefix(f.Key, "tasks."):
			st.Tasks[f.Key[len("tasks."):]], err = uintField(f)
		case f.Key == "executors":
			st.Executors, err = uintField(f)
		case f.Key == "state_version":
			st.StateVersion, err = uintField(f)
		case f.Key == "uptime_ms":
			var ms uint64
			ms, err = uintField(f)
			st.Uptime = time.Duration(min(ms, uint64(1<<63-1)/uint64(time.Millisecond))) * time.Millisecond
		default:
			st.Extra[f.Key] = f.Value
		}
		if err != nil {
			return Stats{}, fmt.Errorf("stats: bad reply: %w", err)
		}
	}
	return st, nil
}

func uintField(f wire.Field) (uint64, error) {
	n, ok := wire.ParseUint(f.Value)
	if !ok {
		return 0, &wire.ValueError{Key: f.Key, Reason: "not a number: " + strconv.Quote(f.Value)}
	}
	return n, nil
}

// StateGet reads the shared state (`state_get`). It returns the values of
// keys and the state_version they belong to. No keys means all keys.
// Keys not set are left out.
func (c *Client) StateGet(ctx context.Context, keys ...string) (map[string]string, uint64, error) {
	for _, k := range keys {
		if !wire.ValidKey(wire.PrefixState + k) {
			return nil, 0, fmt.Errorf("state_get: bad state key %q", k)
		}
	}
	m, err := c.roundTrip(ctx, wire.KindStateGet, wire.KindState, idempotent, func(b *wire.Builder) {
		if len(keys) > 0 {
			b.List("keys", keys)
		}
	})
	if err != nil {
		return nil, 0, err
	}
	version, err := m.Uint("state_version")
	if err != nil {
		return nil, 0, fmt.Errorf("state_get: bad state: %w", err)
	}
	return prefixed(m, wire.PrefixState), version, nil
}

// Debug turns the main control's frame logging on or off (`debug`).
func (c *Client) Debug(ctx context.Context, on bool) error {
	_, err := c.roundTrip(ctx, wire.KindDebug, wire.KindDebugOK, idempotent, func(b *wire.Builder) { b.Bool("on", on) })
	return err
}
