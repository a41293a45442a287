package maincontrol_test

import (
	"context"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/snapshot"
	"github.com/apollo11/apollo11/wire"
)

// TestRestoreBoundsHeldBytes restores tasks of 512 KiB args: the batches
// in flight must hold a few MiB of them, not a copy of the whole state.
func TestRestoreBoundsHeldBytes(t *testing.T) {
	const tasks, argSize = 200, 512 << 10
	dir := t.TempDir()
	opts := snapshot.Options{Dir: dir, Fsync: snapshot.FsyncNever, Logger: slog.New(slog.DiscardHandler)}
	st, err := snapshot.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	c := restoreBenchCore(t, logEffects{st})
	if _, err := maincontrol.Restore(st, c, maincontrol.RestoreOptions{Serve: true}); err != nil {
		t.Fatal(err)
	}
	st.Start(func(uint64) {}, func(error) {})
	const peer = core.PeerID(1)
	c.Open(peer)
	c.Handle(peer, wire.NewMessage("hello"))
	payload := strings.Repeat("p", argSize)
	for i := range tasks {
		m := wire.NewMessage(wire.KindSubmit)
		m.Set("req", "r")
		m.Set("task_type", "nobody")
		m.Set("arg.t", strconv.Itoa(i))
		m.Set("arg.p", payload)
		c.Handle(peer, m)
	}
	snap := c.Freeze()
	lsn := st.LastLSN()
	if err := st.WaitDurable(context.Background(), lsn); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteIncremental(lsn, snap.Since(nil, 0)); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	payload, snap, c = "", nil, nil

	st, err = snapshot.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	sample := func() {
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	c = restoreBenchCore(t, logEffects{st})
	_, err = maincontrol.Restore(st, c, maincontrol.RestoreOptions{
		Serve: true,
		Entry: func([]byte) { sample() },
	})
	if err != nil {
		t.Fatal(err)
	}
	sample()
	if got := c.Counts()[core.Pending]; got != tasks {
		t.Fatalf("%d pending after the restore, want %d", got, tasks)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	live := ms.HeapInuse
	runtime.KeepAlive(c)
	// The state itself holds the args once; what the restart adds on top
	// must stay a small fraction of them.
	const bound = 48 << 20
	extra := int64(peak) - int64(live)
	t.Logf("heap in use: %d MiB before, %d MiB peak, %d MiB live after; args %d MiB",
		base>>20, peak>>20, live>>20, tasks*argSize>>20)
	if extra > bound {
		t.Errorf("restore held %d MiB above the restored state, want at most %d MiB", extra>>20, bound>>20)
	}
}
