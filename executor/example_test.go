package executor_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"strconv"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

// An executor runs each task of its types with the registered handler,
// until the context of Run ends. The handler's Add is applied to the
// shared state atomically with the result.
func ExampleExecutor_Run() {
	addr, stop, err := maincontroltest.Launch(maincontrol.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	double := executor.HandlerFunc(func(ctx context.Context, t *executor.Task) (executor.Result, error) {
		n, err := strconv.Atoi(t.Args["n"])
		if err != nil {
			return executor.Result{}, executor.Permanent(fmt.Errorf("n: %w", err))
		}
		return executor.Result{
			Out: map[string]string{"doubled": strconv.Itoa(2 * n)},
			Add: map[string]int64{"doubled_total": 1},
		}, nil
	})
	ex, err := executor.New(executor.Config{Addr: addr, ID: "doubler-1", Slots: 2,
		Handlers: map[string]executor.Handler{"double": double},
		Logger:   slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- ex.Run(runCtx) }()

	c, err := client.Dial(ctx, addr, client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for _, n := range []string{"21", "many"} {
		_, done, err := c.SubmitWait(ctx, client.SubmitRequest{Type: "double", Args: map[string]string{"n": n}})
		if err != nil {
			log.Fatal(err)
		}
		if done.State == "succeeded" {
			fmt.Println(n, "->", done.Out["doubled"])
		} else {
			fmt.Println(n, "->", done.State+":", done.Error)
		}
	}
	state, _, err := c.StateGet(ctx, "doubled_total")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("doubled_total:", state["doubled_total"])

	stopRun() // a graceful stop: drain, then bye
	fmt.Println("run:", <-ran)
	// Output:
	// 21 -> 42
	// many -> failed: n: strconv.Atoi: parsing "many": invalid syntax
	// doubled_total: 1
	// run: <nil>
}

// Permanent marks a failure that no retry can fix: the task fails at once
// instead of using its remaining attempts.
func ExamplePermanent() {
	err := executor.Permanent(errors.New("no such image"))
	fmt.Println(executor.IsPermanent(err), err)
	fmt.Println(executor.IsPermanent(errors.New("disk busy")))
	// Output:
	// true no such image
	// false
}
