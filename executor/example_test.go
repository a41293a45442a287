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
	"github.com/apollo11/apollo11/wire"
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

// resizer is a handler with the optional lifecycle methods: it checks
// its args, describes itself, and undoes its work for a compensation.
type resizer struct{}

func (resizer) Handle(ctx context.Context, t *executor.Task) (executor.Result, error) {
	return executor.Result{Out: map[string]string{"resized": t.Args["path"]}}, nil
}

// Validate runs before `started`: an error fails the task for good.
func (resizer) Validate(args map[string]string) error {
	if w, _ := strconv.Atoi(args["width"]); w > 10000 {
		return errors.New("width over 10000")
	}
	return nil
}

// Describe is sent at register and shown by `apollo11 types`. Its Args
// are checked before Validate.
func (resizer) Describe() executor.Description {
	return executor.Description{Name: "resizer", Version: "2.1", DefaultTimeout: time.Minute, Args: []executor.Arg{
		{Name: "path", Kind: executor.ArgString, Required: true},
		{Name: "width", Kind: executor.ArgInt},
	}}
}

// Rollback runs for a task that carries rollback_of: a compensation.
func (resizer) Rollback(ctx context.Context, t *executor.Task) (executor.Result, error) {
	return executor.Result{Out: map[string]string{"removed": t.Args["path"]}}, nil
}

// A handler's Validate and its described schema refuse bad args before
// the task starts: the task fails at its first attempt, never retried.
// The main control lists the description with the task type.
func ExampleValidator() {
	addr, stop, err := maincontroltest.Launch(maincontrol.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex, err := executor.New(executor.Config{Addr: addr, ID: "resizer-1",
		Handlers: map[string]executor.Handler{"resize": resizer{}}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- ex.Run(runCtx) }()
	defer func() { stopRun(); <-ran }()

	c, err := client.Dial(ctx, addr, client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for _, args := range []map[string]string{
		{"path": "a.png", "width": "640"},
		{"path": "b.png", "width": "20000"},
		{"width": "640"},
	} {
		sub, done, err := c.SubmitWait(ctx, client.SubmitRequest{Type: "resize", Args: args, MaxAttempts: 3})
		if err != nil {
			log.Fatal(err)
		}
		st, err := c.Query(ctx, sub.ID)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s attempt %d/%d: %q\n", done.State, st.Attempt, st.MaxAttempts, done.Error)
	}
	page, err := c.TypeList(ctx, "", true, 0)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range page.Types {
		fmt.Println(t.Name, t.Handler, t.Version, t.TimeoutMs, wire.FormatArgs(t.Args))
	}
	// Output:
	// succeeded attempt 1/3: ""
	// failed attempt 1/3: "invalid_args: width over 10000"
	// failed attempt 1/3: "invalid_args: arg path: required, missing"
	// resize resizer 2.1 60000 path:string:required,width:int
}

// A handler with Rollback undoes its own work when a run compensates it:
// the task's RollbackOf names the task it undoes, and Rollback runs
// instead of Handle. Without Rollback, Handle gets such tasks too.
func ExampleRollbackHandler() {
	var h executor.Handler = resizer{}
	_, undoes := h.(executor.RollbackHandler)
	d := h.(executor.Describer).Describe()
	fmt.Println(undoes, d.Name, d.Version, d.DefaultTimeout)
	// Output:
	// true resizer 2.1 1m0s
}
