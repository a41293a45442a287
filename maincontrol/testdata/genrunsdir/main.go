// Command genrunsdir writes the data dir fixture that
// TestUpgrade_RunsInManifestHead loads: runs in a manifest of format 2,
// which kept every run among its head entries, written at a graceful stop. It takes the apollo11 binary of a release that wrote that layout
// (the fixture proves a newer one reads it). The executor and the client
// are this tree's: the wire is the same.
//
//	go run ./maincontrol/testdata/genrunsdir -bin /tmp/apollo11-old -out maincontrol/testdata/datadir-runs-v2
//
// The runs it makes are listed in fixtureRuns in
// maincontrol/upgrade_runs_test.go; it stops if an id or a state differs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/executor"
)

func main() {
	bin := flag.String("bin", "", "the apollo11 binary that writes the data dir")
	out := flag.String("out", "", "the data dir to write (must not exist)")
	flag.Parse()
	if *bin == "" || *out == "" {
		log.Fatal("usage: genrunsdir -bin APOLLO11 -out DIR")
	}
	if _, err := os.Stat(*out); err == nil {
		log.Fatalf("%s exists: remove it first", *out)
	}
	if err := run(*bin, *out); err != nil {
		log.Fatal(err)
	}
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func pipeline(key, second string) client.RunRequest {
	return client.RunRequest{Name: "nightly", Key: key, Steps: []client.RunStepRequest{
		{ID: "fetch", Type: "ok", Args: map[string]string{"n": "1"}},
		{ID: "use", Type: second, DependsOn: []string{"fetch"}, MaxAttempts: 1,
			Args: map[string]string{"in": "${steps.fetch.out.n}"}},
	}}
}

func run(bin, out string) error {
	addr := freeAddr()
	mc := exec.Command(bin, "maincontrol", "--data-dir", out, "--listen", addr,
		"--snapshot-every", "30", "--snapshot-interval", "1h", "--log-level", "warn")
	mc.Stderr = os.Stderr
	if err := mc.Start(); err != nil {
		return err
	}
	defer mc.Process.Kill()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var c *client.Client
	for {
		var err error
		if c, err = client.Dial(ctx, addr, client.Options{Name: "genrunsdir"}); err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("main control never answered: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer c.Close()

	ex, err := executor.New(executor.Config{Addr: addr, ID: "fixture-worker", Slots: 4,
		Logger: slog.New(slog.DiscardHandler), Handlers: map[string]executor.Handler{
			"ok": executor.HandlerFunc(func(_ context.Context, t *executor.Task) (executor.Result, error) {
				return executor.Result{Out: map[string]string{"n": t.Args["n"] + t.Args["in"]}}, nil
			}),
			"bad": executor.HandlerFunc(func(context.Context, *executor.Task) (executor.Result, error) {
				return executor.Result{}, executor.Permanent(errors.New("bad on purpose"))
			}),
		}})
	if err != nil {
		return err
	}
	exCtx, exStop := context.WithCancel(context.Background())
	defer exStop()
	go ex.Run(exCtx)

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
	if err := mc.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	_ = mc.Wait()
	exStop()
	return os.Remove(filepath.Join(out, "lock"))
}
