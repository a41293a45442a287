package maincontrol_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
	"github.com/apollo11/apollo11/snapshot/snapshottest"
)

// runUntil starts a main control and returns a stop function.
func runUntil(t *testing.T, cfg maincontrol.Config) (string, func()) {
	t.Helper()
	cfg.Logger = testLogger()
	return maincontroltest.Start(t, cfg)
}

func TestServer_SurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	addr, stop := runUntil(t, maincontrol.Config{DataDir: dir, SnapshotEvery: 7})
	cl := clientPeer(t, addr)
	for i := 0; i < 25; i++ {
		cl.send("submit", "req", strconv.Itoa(i), "task_type", "t", "arg.i", strconv.Itoa(i), "key", "k"+strconv.Itoa(i))
		assert.Equal(t, strconv.Itoa(i+1), cl.expect("submitted").Value("task_id"))
	}
	cl.send("cancel", "req", "c", "task_id", "3")
	cl.expect("cancelled")
	stop()

	addr, _ = runUntil(t, maincontrol.Config{DataDir: dir})
	cl = clientPeer(t, addr)
	cl.send("query", "req", "q", "task_id", "3")
	assert.Equal(t, "cancelled", cl.expect("task_state").Value("state"))
	cl.send("stats", "req", "s")
	st := cl.expect("stats")
	assert.Equal(t, "24", st.Value("tasks.pending"))
	cl.send("submit", "req", "dup", "task_type", "t", "key", "k5")
	dup := cl.expect("submitted")
	assert.Equal(t, "6", dup.Value("task_id"))
	assert.Equal(t, "true", dup.Value("duplicate"))
	cl.send("submit", "req", "new", "task_type", "t")
	assert.Equal(t, "26", cl.expect("submitted").Value("task_id"), "ids are never reused")
	time.Sleep(10 * time.Millisecond)
}

// A snapshot starts once --snapshot-every records are written, not at the
// next tick (spec section 7: every 100 records or 30 s): with ticks an
// hour apart, the fifth record of five-per-snapshot starts one.
func TestServer_SnapshotAtTheCount(t *testing.T) {
	dir := t.TempDir()
	addr, _ := runUntil(t, maincontrol.Config{DataDir: dir, SnapshotEvery: 5, TickInterval: time.Hour})
	cl := clientPeer(t, addr)
	for i := range 7 {
		cl.send("submit", "req", strconv.Itoa(i), "task_type", "t")
		cl.expect("submitted")
	}
	var snaps []string
	require.Eventually(t, func() bool {
		snaps, _ = filepath.Glob(filepath.Join(dir, "snapshot-*[0-9]"))
		return len(snaps) > 0
	}, 10*time.Second, 10*time.Millisecond, "no snapshot without a tick")
	assert.Equal(t, "snapshot-00000000000000000005", filepath.Base(snaps[0]))
}

// A disk that hangs rather than fails: after LogStallTimeout the main
// control treats it as failed. Reads and welcomes are answered, new
// changes get code=unavailable, and once the fsync returns the change it
// waited for is confirmed and changes are taken again.
func TestServer_StalledDisk(t *testing.T) {
	ffs := snapshottest.NewFaultFS(nil)
	addr, _ := runUntil(t, maincontrol.Config{DataDir: t.TempDir(), FS: ffs, LogStallTimeout: 200 * time.Millisecond})
	t.Cleanup(ffs.ReleaseSyncs) // before the server stops: it waits for the disk
	a := clientPeer(t, addr)
	ffs.HoldSyncs()
	a.send("submit", "req", "held", "task_type", "t")

	b := clientPeer(t, addr) // a handshake does not wait for the disk
	require.Eventually(t, func() bool {
		b.send("stats", "req", "s")
		return b.expect("stats").Value("available") == "false"
	}, 5*time.Second, 20*time.Millisecond, "the stall is declared")
	b.send("submit", "req", "new", "task_type", "t")
	e := b.expect("error")
	assert.Equal(t, "unavailable", e.Value("code"))

	ffs.ReleaseSyncs()
	m := a.expect("submitted")
	assert.Equal(t, "held", m.Value("req"))
	require.Eventually(t, func() bool {
		b.send("submit", "req", "again", "task_type", "t")
		return b.recv().Type() == "submitted"
	}, 5*time.Second, 50*time.Millisecond)
}

// A stop whose log cannot be closed (the disk failed, records still
// unwritten) returns an error, so the exit status is not 0; and while the
// stop waits for the disk, no executor is declared lost for its unread
// heartbeats.
func TestServer_StopWithFailedDisk(t *testing.T) {
	ffs := snapshottest.NewFaultFS(nil)
	var logs syncbuf.Buffer
	cfg := maincontrol.Config{DataDir: t.TempDir(), FS: ffs, Listen: freeAddr(t),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	cfg.Core.HeartbeatTimeout = 600 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	cfg.OnReady = func(string) { close(ready) }
	done := make(chan error, 1)
	go func() { done <- maincontrol.Run(ctx, cfg) }()
	<-ready
	ex := executorPeer(t, cfg.Listen, "steady", "x", 1)
	cl := clientPeer(t, cfg.Listen)
	ffs.FailSyncs(errors.New("disk on fire"))
	cl.send("submit", "req", "r", "task_type", "x") // applied, never durable
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		require.Error(t, err, "the log could not be closed: not a clean stop")
		assert.Contains(t, err.Error(), "log could not be closed")
	case <-time.After(30 * time.Second):
		t.Fatal("the stop did not end")
	}
	_ = ex
	if time.Since(start) > cfg.Core.HeartbeatTimeout {
		assert.NotContains(t, logs.String(), "executor lost", "the stop read no heartbeat: nobody is lost for that")
	}
}
