package builtin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/wire"
)

// Echo returns a handler that sends every arg.<k> back as out.<k> and
// succeeds.
func Echo() executor.Handler {
	return described(executor.Description{Name: "echo", Version: Version,
		Args: []executor.Arg{{Name: "*", Kind: executor.ArgString}}}, func(_ context.Context, t *executor.Task) (executor.Result, error) {
		out := make(map[string]string, len(t.Args))
		for k, v := range t.Args {
			out[k] = v
		}
		return executor.Result{Out: out}, nil
	})
}

// maxSleepMillis is the longest sleep a time.Duration holds.
const maxSleepMillis = math.MaxInt64 / int64(time.Millisecond)

// Sleep returns a handler that sleeps arg.ms milliseconds and succeeds.
// It reports progress 0 with what it sleeps, so status can show it.
// arg.ms is a spec number and required. A cancelled sleep returns the
// context's error. A missing or bad arg.ms is a permanent failure.
func Sleep() executor.Handler {
	return described(executor.Description{Name: "sleep", Version: Version,
		Args: []executor.Arg{{Name: "ms", Kind: executor.ArgInt, Required: true}}}, func(ctx context.Context, t *executor.Task) (executor.Result, error) {
		raw, ok := t.Args["ms"]
		if !ok {
			return executor.Result{}, executor.Permanent(errors.New("sleep: arg.ms is required"))
		}
		ms, ok := wire.ParseUint(raw)
		if !ok || ms > uint64(maxSleepMillis) {
			return executor.Result{}, executor.Permanent(fmt.Errorf("sleep: bad arg.ms %q: want milliseconds", raw))
		}
		// Say what it does, so that status shows progress; advisory, so
		// its error (between connections) is ignored.
		_ = t.Progress(0, "sleeping "+raw+" ms")
		timer := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return executor.Result{}, ctx.Err()
		case <-timer.C:
			return executor.Result{}, nil
		}
	})
}

// DefaultFailError is Fail's error text when arg.error is absent.
const DefaultFailError = "fail handler"

// Fail returns a handler that always fails, with error=arg.error. When
// arg.error is absent or empty, the error is "fail handler". The failure
// is retryable unless arg.retryable=false. An arg.retryable other than
// true or false is itself a permanent failure.
func Fail() executor.Handler {
	return described(executor.Description{Name: "fail", Version: Version, Args: []executor.Arg{
		{Name: "error", Kind: executor.ArgString}, {Name: "retryable", Kind: executor.ArgBool}}}, func(_ context.Context, t *executor.Task) (executor.Result, error) {
		retryable := true
		if raw, ok := t.Args["retryable"]; ok {
			b, ok := wire.ParseBool(raw)
			if !ok {
				return executor.Result{}, executor.Permanent(fmt.Errorf("fail: bad arg.retryable %q: want true or false", raw))
			}
			retryable = b
		}
		msg := t.Args["error"]
		if msg == "" {
			msg = DefaultFailError
		}
		err := errors.New(msg)
		if !retryable {
			err = executor.Permanent(err)
		}
		return executor.Result{}, err
	})
}

// Version is the version the built-in handlers describe themselves with:
// it changes when their args or outputs do.
const Version = "1"

// describedFunc is a handler function with its description.
type describedFunc struct {
	executor.HandlerFunc
	d executor.Description
}

func (h describedFunc) Describe() executor.Description { return h.d }

func described(d executor.Description, f executor.HandlerFunc) executor.Handler {
	return describedFunc{f, d}
}
