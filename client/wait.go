package client

import (
	"context"
	"fmt"
	"time"
)

// Poll intervals of Wait: short at first, for a task about to end, then
// at most one query a second.
const (
	waitPollMin = 50 * time.Millisecond
	waitPollMax = time.Second
)

// Wait waits until task id ends and returns its end as a Done, by
// querying the task: at once, then at intervals that grow from 50 ms to
// 1 s. It follows any task, whoever submitted it, across reconnects; a
// Watch (SubmitWatch) is told of the end by the main control instead, and
// falls back to this when its connection is lost. An unknown id (never
// made, or dropped after its retention) returns an *Error with code
// unknown_task.
func (c *Client) Wait(ctx context.Context, id uint64) (Done, error) {
	delay := waitPollMin
	for {
		ts, err := c.Query(ctx, id)
		if err != nil {
			return Done{}, fmt.Errorf("wait for task %d: %w", id, err)
		}
		switch ts.State {
		case "succeeded", "failed", "cancelled":
			return Done{ID: ts.ID, State: ts.State, Out: ts.Out, Error: ts.Error}, nil
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Done{}, fmt.Errorf("wait for task %d: %w", id, ctx.Err())
		}
		delay = min(2*delay, waitPollMax)
	}
}
