package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/apollo11/apollo11/snapshot/snapshottest"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/snapshot"
	"github.com/apollo11/apollo11/wire"
)

// inProcess is a main control run by maincontrol.Run in the test process,
// so that its file layer can be replaced.
type inProcess struct {
	addr   string
	cancel context.CancelFunc
	done   chan error
}

func runInProcess(t testing.TB, dir string, fsys snapshot.FS) *inProcess {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ready := make(chan struct{})
	cfg := maincontrol.Config{Listen: addr, DataDir: dir, FS: fsys, SnapshotEvery: 50, Logger: quiet,
		OnReady: func(string) { close(ready) },
		Core:    core.Config{HeartbeatTimeout: 1500 * time.Millisecond, HeartbeatInterval: 500 * time.Millisecond}}
	ctx, cancel := context.WithCancel(context.Background())
	p := &inProcess{addr: addr, cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- maincontrol.Run(ctx, cfg) }()
	select {
	case <-ready:
	case err := <-p.done:
		cancel()
		t.Fatalf("main control did not start: %v", err)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("main control did not start in 20 s")
	}
	t.Cleanup(func() { _ = p.stop(30 * time.Second) })
	return p
}

// stop stops gracefully and returns Run's error, or an error if it did
// not return within timeout.
func (p *inProcess) stop(timeout time.Duration) error {
	p.cancel()
	select {
	case err, ok := <-p.done:
		if !ok {
			return nil
		}
		close(p.done)
		return err
	case <-time.After(timeout):
		return fmt.Errorf("Run did not return %v after its context was cancelled", timeout)
	}
}

// TestDisk_FullDuringLogWrites runs the main control in process on a
// file system that fills up (ENOSPC; every other round, fsync fails with
// EIO instead) under a load of submits and results. While the disk is
// full, a new submit must be refused at once with code=unavailable (those
// in flight are held), reads must still be answered within probeLimit,
// and nothing unwritten may be confirmed; once it heals, submits are confirmed again. The last round
// stops the main control while the disk still fails: the stop must
// return. At the end the main control restarts on the real file system from the same data dir:
// every confirmed change must be there.
func TestDisk_FullDuringLogWrites(t *testing.T) {
	sc := currentScale()
	fig := figures.add(11, "disk full (ENOSPC) or failing fsync (EIO) during log writes", "faults")
	dir := t.TempDir()
	ffs := snapshottest.NewFaultFS(snapshottest.Writable)
	l := newLedger()
	for round := 0; round < sc.diskFullRounds; round++ {
		mc := runInProcess(t, dir, ffs)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); produce(ctx, mc.addr, l, round, 5*time.Millisecond) }()
		go func() { defer wg.Done(); runExecutor(ctx, mc.addr, fmt.Sprintf("disk-%d", round), l, 7, false) }()
		time.Sleep(300 * time.Millisecond)

		fault := "ENOSPC"
		if round%2 == 0 {
			ffs.FailWritesAfter(int64(round*997%4096), syscall.ENOSPC)
		} else {
			fault = "EIO on fsync"
			ffs.FailSyncs(syscall.EIO)
		}
		fig.injected++
		waitUnavailable(t, mc.addr)
		refusedSubmit(t, mc.addr)
		fig.probed(probe(t, mc.addr, nil, false)) // reads while full
		time.Sleep(1200 * time.Millisecond)       // the writer retries every second
		fig.probed(probe(t, mc.addr, nil, false))

		if round == sc.diskFullRounds-1 {
			// The last round stops while the disk is still failing: the
			// graceful stop must return, confirming nothing unwritten,
			// and say that its log could not be closed (exit 1, not 0).
			cancel()
			wg.Wait()
			stopped := time.Now()
			err := mc.stop(30 * time.Second)
			if err == nil || !strings.Contains(err.Error(), "log could not be closed") {
				t.Fatalf("stop while the disk fails: want the log's failure reported, got %v", err)
			}
			fig.note("a graceful stop while the disk was failing returned after %s", time.Since(stopped).Round(time.Millisecond))
			ffs.Heal()
			break
		}
		ffs.Heal()
		healed := time.Now()
		for {
			if _, err := probeOnce(mc.addr, nil, true); err == nil {
				break
			}
			if time.Since(healed) > 10*time.Second {
				t.Fatalf("round %d (%s): submits not confirmed 10 s after the disk healed", round, fault)
			}
			time.Sleep(10 * time.Millisecond)
		}
		fig.recovered(time.Since(healed))
		fig.probed(probe(t, mc.addr, nil, true))
		time.Sleep(300 * time.Millisecond)
		cancel()
		wg.Wait()
		if err := mc.stop(30 * time.Second); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	mc := runInProcess(t, dir, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); runExecutor(ctx, mc.addr, "disk-drain", l, 1, false) }()
	l.waitEnded(t, mc.addr, nil, 60*time.Second)
	cancel()
	<-done
	l.account(t, mc.addr, nil, fig)
	l.mu.Lock()
	fig.note("in-process main control on an injected snapshot.FS; %d writes or fsyncs failed; a new submit was refused with code=unavailable in every fault, and the load's producer got %d such answers (it waits for its in-flight submits, which are held until the disk heals); after the last round it restarted on the real file system and every confirmed change was there",
		ffs.Fails(), l.unavailable)
	l.mu.Unlock()
}

// refusedSubmit checks that a submit is refused at once with
// code=unavailable.
func refusedSubmit(t testing.TB, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, err = c.Submit(ctx, client.SubmitRequest{Type: "work"})
	if !client.IsCode(err, wire.CodeUnavailable) {
		t.Errorf("submit while the disk fails: %v, want code=unavailable", err)
	}
	if d := time.Since(start); d > probeLimit {
		t.Errorf("submit while the disk fails answered after %v", d)
	}
}

// waitUnavailable waits until stats says the log is not writable.
func waitUnavailable(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for stats(t, addr, nil).Extra["available"] != "false" {
		if time.Now().After(deadline) {
			t.Fatal(errors.New("the main control did not notice the failing disk within 10 s"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
