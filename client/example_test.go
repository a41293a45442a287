package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

// A task waits in the queue until an executor of its type connects.
func ExampleClient_Submit() {
	addr, stop, err := maincontroltest.Launch(maincontrol.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	sub, err := c.Submit(ctx, client.SubmitRequest{Type: "resize", Args: map[string]string{"image": "cat.png"}})
	if err != nil {
		log.Fatal(err)
	}
	st, err := c.Query(ctx, sub.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("task", sub.ID, st.State)
	// Output: task 1 pending
}

// A key makes a submit idempotent: the same key returns the same task.
func ExampleSubmitRequest_key() {
	addr, stop, err := maincontroltest.Launch(maincontrol.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	req := client.SubmitRequest{Type: "report", Key: "report-2026-12-01"}
	for range 2 {
		sub, err := c.Submit(ctx, req)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("task", sub.ID, "duplicate:", sub.Duplicate)
	}
	// Output:
	// task 1 duplicate: false
	// task 1 duplicate: true
}

// SubmitWait returns once an executor has run the task to its end.
func ExampleClient_SubmitWait() {
	addr, stop, err := maincontroltest.Launch(maincontrol.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// An executor that greets whoever the task names.
	ex, err := executor.New(executor.Config{Addr: addr, ID: "greeter", Slots: 1,
		Logger: slog.New(slog.DiscardHandler),
		Handlers: map[string]executor.Handler{"greet": executor.HandlerFunc(
			func(ctx context.Context, t *executor.Task) (executor.Result, error) {
				return executor.Result{Out: map[string]string{"greeting": "hello, " + t.Args["name"]}}, nil
			})}})
	if err != nil {
		log.Fatal(err)
	}
	exCtx, exStop := context.WithCancel(ctx)
	exDone := make(chan error, 1)
	go func() { exDone <- ex.Run(exCtx) }()
	defer func() { exStop(); <-exDone }()

	c, err := client.Dial(ctx, addr, client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	_, done, err := c.SubmitWait(ctx, client.SubmitRequest{Type: "greet", Args: map[string]string{"name": "Ada"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(done.State, done.Out["greeting"])
	// Output: succeeded hello, Ada
}

// The client reconnects by itself; these options bound how, and the
// errors say what became of a request the lost connection carried.
func ExampleReconnect() {
	addr, stop, err := maincontroltest.Launch(maincontrol.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{Reconnect: client.Reconnect{
		MinDelay:    200 * time.Millisecond, // the first wait before dialling again
		MaxDelay:    10 * time.Second,       // the longest, as it doubles
		GiveUpAfter: 10 * time.Minute,       // then calls fail with ErrConnectionLost
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// A submit without a key is never sent twice: after a lost connection
	// its outcome is unknown. With a key it is sent again, and returns the
	// same task.
	sub, err := c.Submit(ctx, client.SubmitRequest{Type: "ingest", Key: "batch-0042"})
	switch {
	case errors.Is(err, client.ErrOutcomeUnknown):
		fmt.Println("maybe submitted: list the tasks to find out")
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println("task", sub.ID)
	}
	// Output: task 1
}

// Wait follows any task by its id until it ends, across reconnects.
func ExampleClient_Wait() {
	addr, stop, err := maincontroltest.Launch(maincontrol.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Submit(ctx, client.SubmitRequest{Type: "never-run"})
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = c.Cancel(ctx, sub.ID) }() // another caller ends it
	done, err := c.Wait(ctx, sub.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("task", done.ID, done.State)
	// Output: task 1 cancelled
}
