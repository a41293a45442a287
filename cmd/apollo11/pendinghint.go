package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/apollo11/apollo11/client"
)

// pendingHint says on stderr, once, that a task `submit --wait` follows
// is still pending `after` past its delay. A type no executor takes waits
// for good without a word. The main control cannot refuse it, as an
// executor for it may register later. A user who mistyped --type, or
// asked for exec from a `dev` without it, saw only a wait that never
// ended. A wait with no --wait-timeout (forever) is told how to end. It
// returns a function that stops it and waits until it is not writing.
func pendingHint(stderr io.Writer, cl *client.Client, id uint64, req client.SubmitRequest,
	after, timeout time.Duration, forever bool) (stop func()) {
	if after <= 0 {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTimer(req.Delay + after)
		defer t.Stop()
		select {
		case <-quit:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		go func() { // the wait's end need not wait out these two requests
			select {
			case <-quit:
				cancel()
			case <-ctx.Done():
			}
		}()
		st, err := cl.Query(ctx, id)
		if err != nil || st.State != "pending" {
			return
		}
		stats, err := cl.Stats(ctx)
		if err != nil {
			return
		}
		end := ""
		if forever {
			end = " This wait has no end of its own: Ctrl-C leaves the task queued, and --wait-timeout bounds the wait."
		}
		fmt.Fprintf(stderr, "task %d is still pending after %v: is an executor that takes type %q connected? "+
			"(executors connected: %d; %s)%s\n",
			id, req.Delay+after, req.Type, stats.Executors, startOne(req.Type), end)
	}()
	return func() {
		close(quit)
		<-done
	}
}

// startOne says how an executor for typ is started. `apollo11 executor`
// knows only its built-in types, and exec only when its operator allows
// it. Any other type needs an executor of your own.
func startOne(typ string) string {
	switch typ {
	case "echo", "sleep", "fail":
		return "`apollo11 executor --types " + typ + "` starts one"
	case "exec":
		return "`apollo11 executor --types exec --allow-exec --exec-allow PROGRAM,...` starts one"
	}
	return "apollo11 executor runs only echo, sleep, fail and exec: a type of your own needs an executor built with the executor package"
}
