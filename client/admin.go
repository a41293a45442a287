package client

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// The admin requests of protocol sections 8.3 and 8.4. With a main
// control that has --admin-token-file they need Options.AdminToken, else
// they fail with code not_permitted.

// RequeueOptions are requeue's optional values.
type RequeueOptions struct {
	// KeepAttempts keeps the attempts used. The next run is the attempt
	// after the last, and a failure of it is final once they are used up.
	KeepAttempts bool
	// Reason is kept with the task and shown by Query (up to 256 bytes).
	Reason string
}

func (o RequeueOptions) fill(b *wire.Builder) {
	if o.KeepAttempts {
		b.Bool("keep_attempts", true)
	}
	if o.Reason != "" {
		b.Str("reason", o.Reason)
	}
}

// Requeued is the reply to Requeue.
type Requeued struct {
	ID      uint64 `json:"task_id"`
	State   string `json:"state"` // pending or waiting
	Version uint64 `json:"version"`
}

// Requeue puts a failed or cancelled task back to pending, or to waiting
// while some of its dependencies have not ended (`requeue`). Another
// state, or a dependency that failed, returns code illegal_transition. An
// unknown id returns unknown_task.
func (c *Client) Requeue(ctx context.Context, id uint64, o RequeueOptions) (Requeued, error) {
	m, err := c.roundTrip(ctx, wire.KindRequeue, wire.KindRequeued, oneShot, func(b *wire.Builder) {
		b.Uint("task_id", id)
		o.fill(b)
	})
	if err != nil {
		return Requeued{}, err
	}
	r := Requeued{State: m.Value("state")}
	if r.ID, err = m.Uint("task_id"); err == nil {
		r.Version, err = m.Uint("version")
	}
	if err != nil {
		return Requeued{}, fmt.Errorf("requeue: bad requeued: %w", err)
	}
	return r, nil
}

// Filter selects tasks for the bulk requests. A zero field is no
// condition. At least one of Type, States, Error, EndedBefore and
// EndedAfter must be set. AllStates is every state the request acts on.
type Filter struct {
	Type        string
	States      []string
	AllStates   bool
	Error       string    // the error text contains it
	EndedBefore time.Time // ended before it
	EndedAfter  time.Time // ended at or after it
	After       uint64    // ids above it only
	Limit       int       // tasks changed at most, 1 to 1,000; 0: 1,000
	DryRun      bool      // count only; nothing changes
}

func (f Filter) fill(b *wire.Builder) {
	if f.Type != "" {
		b.Str("task_type", f.Type)
	}
	if len(f.States) > 0 || f.AllStates {
		b.Str("state", strings.Join(f.States, ","))
	}
	if f.Error != "" {
		b.Str("error", f.Error)
	}
	if !f.EndedBefore.IsZero() {
		b.Uint("ended_before", uint64(max(1, f.EndedBefore.UnixMilli())))
	}
	if !f.EndedAfter.IsZero() {
		b.Uint("ended_after", uint64(max(1, f.EndedAfter.UnixMilli())))
	}
	if f.After > 0 {
		b.Uint("after", f.After)
	}
	if f.Limit > 0 {
		b.Uint("limit", uint64(f.Limit))
	}
	if f.DryRun {
		b.Bool("dry_run", true)
	}
}

// Matched is one page of the reply to a bulk request.
type Matched struct {
	Count   uint64 `json:"count"`             // tasks changed, or that would be (dry run)
	Skipped uint64 `json:"skipped,omitempty"` // matched but not changed
	Next    uint64 `json:"next,omitempty"`    // 0: every task was looked at; else pass as Filter.After
	DryRun  bool   `json:"dry_run,omitempty"`
}

// RequeueWhere requeues the failed and cancelled tasks f matches, one
// page (`requeue_where`).
func (c *Client) RequeueWhere(ctx context.Context, f Filter, o RequeueOptions) (Matched, error) {
	return c.bulk(ctx, wire.KindRequeueWhere, f, o.fill)
}

// CancelWhere cancels the tasks not yet ended that f matches, one page
// (`cancel_where`). f may not set EndedBefore or EndedAfter.
func (c *Client) CancelWhere(ctx context.Context, f Filter) (Matched, error) {
	return c.bulk(ctx, wire.KindCancelWhere, f, nil)
}

// PurgeWhere drops the ended tasks f matches before their retention runs
// out, one page (`purge_where`).
func (c *Client) PurgeWhere(ctx context.Context, f Filter) (Matched, error) {
	return c.bulk(ctx, wire.KindPurgeWhere, f, nil)
}

func (c *Client) bulk(ctx context.Context, typ wire.Kind, f Filter, extra func(*wire.Builder)) (Matched, error) {
	k := oneShot // sent twice, it could change tasks the first did not
	if f.DryRun {
		k = idempotent
	}
	m, err := c.roundTrip(ctx, typ, wire.KindMatched, k, func(b *wire.Builder) {
		f.fill(b)
		if extra != nil {
			extra(b)
		}
	})
	if err != nil {
		return Matched{}, err
	}
	var r Matched
	if r.Count, err = m.Uint("count"); err == nil {
		if r.Skipped, err = m.UintOr("skipped", 0); err == nil {
			r.Next, err = m.UintOr("next", 0)
		}
	}
	if err != nil {
		return Matched{}, fmt.Errorf("%s: bad matched: %w", typ, err)
	}
	r.DryRun = m.Value("dry_run") == "true"
	return r, nil
}

// BulkAll repeats a bulk request page by page, following Next, and
// returns the totals. Each page runs under its own context from pageCtx.
func BulkAll(f Filter, pageCtx func() (context.Context, context.CancelFunc),
	page func(ctx context.Context, f Filter) (Matched, error)) (Matched, error) {
	var total Matched
	total.DryRun = f.DryRun
	for {
		ctx, cancel := pageCtx()
		r, err := page(ctx, f)
		cancel()
		if err != nil {
			return total, err
		}
		total.Count += r.Count
		total.Skipped += r.Skipped
		if r.Next == 0 {
			return total, nil
		}
		if r.Next <= f.After {
			return total, fmt.Errorf("next %d does not advance past %d", r.Next, f.After)
		}
		f.After = r.Next
	}
}
