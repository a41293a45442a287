// Command genfixture writes the old-format data dirs that the upgrade
// tests load, with a release's apollo11 binary as the main control (the
// fixture proves a newer one reads what it wrote). The executor and the
// client are this tree's: the wire is the same.
//
//	go run ./maincontrol/testdata/genfixture -layout v1 -bin /tmp/apollo11-old -out maincontrol/testdata/datadir-v1
//	go run ./maincontrol/testdata/genfixture -layout runs-v2 -bin /tmp/apollo11-old -out maincontrol/testdata/datadir-runs-v2
//
// Each layout's tasks or runs are listed in its upgrade test
// (maincontrol/upgrade_test.go, upgrade_runs_test.go); the command stops
// if an id or a state differs.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/executor"
)

// layouts write one fixture each, from a started main control.
var layouts = map[string]func(*fixture) error{
	"v1":      writeV1,
	"runs-v2": writeRunsV2,
}

func main() {
	layout := flag.String("layout", "", "the fixture to write: v1 or runs-v2")
	bin := flag.String("bin", "", "the apollo11 binary that writes the data dir")
	out := flag.String("out", "", "the data dir to write (must not exist)")
	flag.Parse()
	write := layouts[*layout]
	if write == nil || *bin == "" || *out == "" {
		log.Fatal("usage: genfixture -layout v1|runs-v2 -bin APOLLO11 -out DIR")
	}
	if _, err := os.Stat(*out); err == nil {
		log.Fatalf("%s exists: remove it first", *out)
	}
	if err := run(*layout, *bin, *out, write); err != nil {
		log.Fatal(err)
	}
}

// fixture is a release's main control on a new data dir, a client of it
// and a context that bounds the whole run.
type fixture struct {
	ctx  context.Context
	out  string
	mc   *exec.Cmd
	c    *client.Client
	addr string
}

func run(layout, bin, out string, write func(*fixture) error) error {
	f := &fixture{out: out, addr: freeAddr()}
	f.mc = exec.Command(bin, "maincontrol", "--data-dir", out, "--listen", f.addr,
		"--snapshot-every", snapshotEvery[layout], "--snapshot-interval", "1h", "--log-level", "warn")
	f.mc.Stderr = os.Stderr
	if err := f.mc.Start(); err != nil {
		return err
	}
	defer f.mc.Process.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f.ctx = ctx
	for {
		var err error
		if f.c, err = client.Dial(ctx, f.addr, client.Options{Name: "genfixture"}); err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("main control never answered: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer f.c.Close()
	if err := write(f); err != nil {
		return err
	}
	_ = f.mc.Wait()
	return os.Remove(filepath.Join(out, "lock"))
}

// snapshotEvery is each layout's --snapshot-every: where its snapshot
// falls among the changes it makes.
var snapshotEvery = map[string]string{"v1": "50", "runs-v2": "30"}

// runExecutor serves handlers until the returned stop.
func (f *fixture) runExecutor(handlers map[string]executor.Handler) (stop func(), err error) {
	ex, err := executor.New(executor.Config{Addr: f.addr, ID: "fixture-worker", Slots: 4,
		Logger: slog.New(slog.DiscardHandler), Handlers: handlers})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	go ex.Run(ctx)
	return cancel, nil
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
