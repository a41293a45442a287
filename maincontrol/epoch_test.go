package maincontrol_test

import (
	"io/fs"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/snapshot"
	"github.com/apollo11/apollo11/snapshot/snapshottest"
	"github.com/apollo11/apollo11/wire"
)

// inbox reads p's frames on a goroutine, so that a test can tell that
// none came for a while (a read deadline would spoil the reader).
func inbox(p *rawPeer) <-chan *wire.Message {
	require.NoError(p.t, p.c.SetReadDeadline(time.Time{})) // next and quiet time it
	ch := make(chan *wire.Message, 64)
	go func() {
		defer close(ch)
		for {
			m, err := p.r.ReadMessage()
			if err != nil {
				return
			}
			ch <- m
		}
	}()
	return ch
}

func next(t *testing.T, ch <-chan *wire.Message, typ string) *wire.Message {
	t.Helper()
	select {
	case m, ok := <-ch:
		require.True(t, ok, "connection closed, wanted %s", typ)
		require.Equal(t, typ, m.Type(), "got %s", m)
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", typ)
		return nil
	}
}

// quiet requires that no frame arrives for d.
func quiet(t *testing.T, ch <-chan *wire.Message, d time.Duration, why string) {
	t.Helper()
	select {
	case m := <-ch:
		t.Fatalf("%s: got %s", why, m)
	case <-time.After(d):
	}
}

// A task frame does not wait for its own dispatch record, nor for the
// result that freed the slot: while every fsync hangs, an executor that
// holds one task at a time gets its next task (submitted and confirmed
// before) with the result_ack still held. A task whose submit is not yet
// durable is not sent until it is (spec section 4).
func TestServer_TaskBeforeItsDispatchIsDurable(t *testing.T) {
	t.Parallel()
	ffs := snapshottest.NewFaultFS(nil)
	addr, _ := runUntil(t, maincontrol.Config{DataDir: t.TempDir(), FS: ffs, LogStallTimeout: time.Minute})
	t.Cleanup(ffs.ReleaseSyncs) // before the server stops: it waits for the disk
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)
	frames := inbox(ex)
	a := cl.submit("a", "task_type", "t")
	b := cl.submit("b", "task_type", "t")
	ta := next(t, frames, "task")
	require.Equal(t, strconv.FormatUint(a, 10), ta.Value("task_id"))
	ex.start(ta)
	cl.waitState(a, "running", 5*time.Second) // its start is durable too

	ffs.HoldSyncs()
	ex.send("result", "task_id", ta.Value("task_id"), "version", ta.Value("version"), "status", "succeeded")
	tb := next(t, frames, "task") // while the result and the dispatch wait for the disk
	require.Equal(t, strconv.FormatUint(b, 10), tb.Value("task_id"))
	quiet(t, frames, 200*time.Millisecond, "the result_ack waits for the disk")

	cl.send("submit", "req", "c", "task_type", "t")
	ex.start(tb)
	ex.send("result", "task_id", tb.Value("task_id"), "version", tb.Value("version"), "status", "succeeded")
	quiet(t, frames, 300*time.Millisecond, "a task whose submit is not durable waits")

	ffs.ReleaseSyncs()
	id := cl.expect("submitted").Value("task_id")
	got := map[string]int{}
	for range 3 {
		m := <-frames
		require.NotNil(t, m)
		got[m.Type()]++
		if m.Type() == "task" {
			assert.Equal(t, id, m.Value("task_id"))
			assert.Equal(t, 2, got["result_ack"], "the acks were held before it")
		}
	}
	assert.Equal(t, map[string]int{"result_ack": 2, "task": 1}, got)
}

// An executor gets no task frame before its registered, which waits for
// its registration record, even for a task whose submit is long durable.
func TestServer_NoTaskBeforeRegistered(t *testing.T) {
	t.Parallel()
	ffs := snapshottest.NewFaultFS(nil)
	addr, _ := runUntil(t, maincontrol.Config{DataDir: t.TempDir(), FS: ffs, LogStallTimeout: time.Minute})
	t.Cleanup(ffs.ReleaseSyncs)
	cl := clientPeer(t, addr)
	id := cl.submit("a", "task_type", "t")

	ffs.HoldSyncs()
	ex := dialRaw(t, addr)
	frames := inbox(ex)
	ex.send("register", "executor_id", "e1", "task_types", "t", "slots", "1")
	quiet(t, frames, 300*time.Millisecond, "nothing before the registration is durable")
	ffs.ReleaseSyncs()
	next(t, frames, "registered")
	assert.Equal(t, strconv.FormatUint(id, 10), next(t, frames, "task").Value("task_id"))
}

// syncCounter counts the fsyncs of log segments that follow a write to
// them: those that make records durable.
type syncCounter struct {
	snapshot.FS
	syncs atomic.Int64
}

func (c *syncCounter) OpenFile(name string, flag int, perm fs.FileMode) (snapshot.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil || !snapshottest.LogSegments(name, flag) {
		return f, err
	}
	return &countedFile{File: f, c: c}, nil
}

type countedFile struct {
	snapshot.File
	c       *syncCounter
	written atomic.Bool
}

func (f *countedFile) Write(p []byte) (int, error) {
	f.written.Store(true)
	return f.File.Write(p)
}

func (f *countedFile) Sync() error {
	err := f.File.Sync()
	if err == nil && f.written.Swap(false) {
		f.c.syncs.Add(1)
	}
	return err
}

// Each start makes a new epoch durable before it serves, even with
// --fsync never: 0 in a new data dir, then one more at each start, seen in
// the versions of the dispatches (epoch in the high 32 bits).
func TestServer_EpochDurableBeforeServing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for epoch := range uint64(3) {
		fsys := &syncCounter{FS: snapshot.OS}
		var syncedAtReady atomic.Int64
		cfg := maincontrol.Config{DataDir: dir, FS: fsys, Fsync: snapshot.FsyncNever,
			OnReady: func(string) { syncedAtReady.Store(fsys.syncs.Load()) }}
		addr, stop := runUntil(t, cfg)
		assert.Positive(t, syncedAtReady.Load(), "epoch %d: no record fsynced before serving", epoch)
		cl := clientPeer(t, addr)
		ex := executorPeer(t, addr, "e1", "t", 1)
		cl.submit("s", "task_type", "t")
		tk := ex.expect("task")
		assert.Equal(t, strconv.FormatUint(epoch<<32|1, 10), tk.Value("version"), "epoch %d", epoch)
		ex.start(tk)
		assert.Equal(t, "true", ex.finish(tk, "status", "succeeded").Value("accepted"))
		stop()
	}
}
