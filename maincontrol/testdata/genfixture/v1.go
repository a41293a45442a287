package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/executor"
)

// writeV1 writes the fixture TestUpgrade_DataDirV1 loads: tasks in every
// state, keys, dependencies and shared state, half in a snapshot and half
// only in the log, left by a kill.
func writeV1(f *fixture) error {
	held := make(chan struct{})
	stop, err := f.runExecutor(map[string]executor.Handler{
		"ok": executor.HandlerFunc(func(_ context.Context, t *executor.Task) (executor.Result, error) {
			return executor.Result{Out: map[string]string{"n": t.Args["n"]},
				Set: map[string]string{"color": t.Args["color"]}, Add: map[string]int64{"count": 1}}, nil
		}),
		"bad": executor.HandlerFunc(func(context.Context, *executor.Task) (executor.Result, error) {
			return executor.Result{}, executor.Permanent(errors.New("bad on purpose"))
		}),
		"hold": executor.HandlerFunc(func(ctx context.Context, _ *executor.Task) (executor.Result, error) {
			close(held)
			<-ctx.Done()
			return executor.Result{}, context.Cause(ctx)
		}),
	})
	if err != nil {
		return err
	}
	defer stop()
	ctx, c, out := f.ctx, f.c, f.out

	ended := func(id uint64, want string) error {
		for ctx.Err() == nil {
			st, err := c.Query(ctx, id)
			if err != nil {
				return err
			}
			if st.State == want {
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
		return fmt.Errorf("task %d never reached %s", id, want)
	}
	next := uint64(1)
	submit := func(req client.SubmitRequest, want string) error {
		s, err := c.Submit(ctx, req)
		if err != nil {
			return err
		}
		if s.ID != next {
			return fmt.Errorf("task %s got id %d, want %d", req.Type, s.ID, next)
		}
		next++
		return ended(s.ID, want)
	}
	steps := []struct {
		req  client.SubmitRequest
		want string
	}{
		// Before the snapshot.
		{client.SubmitRequest{Type: "ok", Args: map[string]string{"n": "1", "color": "red"}}, "succeeded"},     // 1
		{client.SubmitRequest{Type: "bad", MaxAttempts: 1}, "failed"},                                          // 2
		{client.SubmitRequest{Type: "nobody", Key: "key-pending-1"}, "pending"},                                // 3
		{client.SubmitRequest{Type: "nobody", DependsOn: []uint64{3}}, "waiting"},                              // 4
		{client.SubmitRequest{Type: "ok", Key: "key-ended-1", Args: map[string]string{"n": "5"}}, "succeeded"}, // 5
		{client.SubmitRequest{Type: "nobody", Priority: 7, TraceID: "trace-6"}, "pending"},                     // 6
	}
	for _, s := range steps {
		if err := submit(s.req, s.want); err != nil {
			return err
		}
	}
	if err := c.Cancel(ctx, 6); err != nil { // 6: cancelled
		return err
	}
	for next <= 16 { // 7..16: filler, to reach --snapshot-every
		if err := submit(client.SubmitRequest{Type: "ok", Args: map[string]string{"n": fmt.Sprint(next), "color": "green"}}, "succeeded"); err != nil {
			return err
		}
	}
	for ctx.Err() == nil {
		if m, _ := filepath.Glob(filepath.Join(out, "snapshot-*")); len(m) > 0 && !strings.HasSuffix(m[0], ".tmp") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// After the snapshot: only in the log.
	steps = []struct {
		req  client.SubmitRequest
		want string
	}{
		{client.SubmitRequest{Type: "ok", Args: map[string]string{"n": "17", "color": "blue"}}, "succeeded"}, // 17
		{client.SubmitRequest{Type: "nobody", Key: "key-pending-2", Args: map[string]string{"a": "b"}}, "pending"},
		{client.SubmitRequest{Type: "nobody", DependsOn: []uint64{18, 17}}, "waiting"}, // 19
		{client.SubmitRequest{Type: "hold", Timeout: time.Hour}, "running"},            // 20
		{client.SubmitRequest{Type: "nobody"}, "pending"},                              // 21
	}
	for _, s := range steps {
		if err := submit(s.req, s.want); err != nil {
			return err
		}
	}
	if err := c.Cancel(ctx, 21); err != nil { // 21: cancelled, in the log
		return err
	}
	if err := ended(21, "cancelled"); err != nil {
		return err
	}
	<-held
	// The dispatch and start records of 20 need no reply: give their
	// fsync time, then kill the main control as a crash would.
	time.Sleep(500 * time.Millisecond)
	return f.mc.Process.Kill()
}
