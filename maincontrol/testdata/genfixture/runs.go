package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/executor"
)

// writeRunsV2 writes the fixture TestUpgrade_RunsInManifestHead loads:
// runs in a manifest of format 2, which kept every run among its head
// entries, written at a graceful stop.
func writeRunsV2(f *fixture) error {
	stop, err := f.runExecutor(map[string]executor.Handler{
		"ok": executor.HandlerFunc(func(_ context.Context, t *executor.Task) (executor.Result, error) {
			return executor.Result{Out: map[string]string{"n": t.Args["n"] + t.Args["in"]}}, nil
		}),
		"bad": executor.HandlerFunc(func(context.Context, *executor.Task) (executor.Result, error) {
			return executor.Result{}, executor.Permanent(errors.New("bad on purpose"))
		}),
	})
	if err != nil {
		return err
	}
	defer stop()
	ctx, c := f.ctx, f.c

	next := uint64(1)
	submit := func(r client.RunRequest, want string) error {
		s, err := c.RunSubmit(ctx, r)
		if err != nil {
			return err
		}
		if s.ID != next {
			return fmt.Errorf("run %s got id %d, want %d", r.Key, s.ID, next)
		}
		next++
		for ctx.Err() == nil {
			st, err := c.RunQuery(ctx, client.RunRef{ID: s.ID})
			if err != nil {
				return err
			}
			if st.State == want {
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
		return fmt.Errorf("run %d never reached %s", s.ID, want)
	}
	// Runs 1-3, and filler runs 4-8, over two snapshots
	// (--snapshot-every).
	if err := submit(pipeline("nightly-1", "ok"), "succeeded"); err != nil {
		return err
	}
	if err := submit(pipeline("", "bad"), "failed"); err != nil {
		return err
	}
	if err := submit(pipeline("waits-1", "nobody"), "running"); err != nil {
		return err
	}
	for next <= 8 {
		if err := submit(pipeline(fmt.Sprint("filler-", next), "ok"), "succeeded"); err != nil {
			return err
		}
	}
	// A task that is no run's, then a graceful stop: its snapshot holds
	// every run as it is, and the log after it nothing.
	if _, err := c.Submit(ctx, client.SubmitRequest{Type: "nobody", Key: "after-1"}); err != nil {
		return err
	}
	return f.mc.Process.Signal(syscall.SIGTERM)
}

func pipeline(key, second string) client.RunRequest {
	return client.RunRequest{Name: "nightly", Key: key, Steps: []client.RunStepRequest{
		{ID: "fetch", Type: "ok", Args: map[string]string{"n": "1"}},
		{ID: "use", Type: second, DependsOn: []string{"fetch"}, MaxAttempts: 1,
			Args: map[string]string{"in": "${steps.fetch.out.n}"}},
	}}
}
