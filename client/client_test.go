package client_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/wire"
)

func TestClient_Submit(t *testing.T) {
	tests := []struct {
		name string
		req  client.SubmitRequest
		want map[string]string // every key of the submit but type and req
	}{
		{"minimal", client.SubmitRequest{Type: "echo"}, map[string]string{"task_type": "echo"}},
		{"everything", client.SubmitRequest{
			Type: "exec", Args: map[string]string{"b": "2", "a": "x=y\nz"}, Priority: 9, MaxAttempts: 5,
			Timeout: 1500 * time.Millisecond, Delay: time.Microsecond, Key: "k-1", TraceID: "t-1", DependsOn: []uint64{3, 1},
		}, map[string]string{"task_type": "exec", "arg.a": "x=y\nz", "arg.b": "2", "priority": "9", "max_attempts": "5",
			"timeout_ms": "1500", "delay_ms": "1", "key": "k-1", "trace_id": "t-1", "depends_on": "3,1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := mustStartFakeServer(t)
			c, sc := mustDial(t, f, client.Options{})
			go func() {
				m := sc.expect("submit")
				got := map[string]string{}
				for _, fl := range m.Fields {
					if fl.Key != "type" && fl.Key != "req" {
						got[fl.Key] = fl.Value
					}
				}
				assert.Equal(t, tc.want, got)
				sc.send("submitted", "req", m.Value("req"), "task_id", "42")
			}()
			sub, err := c.Submit(context.Background(), tc.req)
			require.NoError(t, err)
			assert.Equal(t, client.Submitted{ID: 42}, sub)
		})
	}
	t.Run("duplicate", func(t *testing.T) {
		f := mustStartFakeServer(t)
		c, sc := mustDial(t, f, client.Options{})
		go func() {
			m := sc.expect("submit")
			sc.send("submitted", "req", m.Value("req"), "task_id", "7", "duplicate", "true")
		}()
		sub, err := c.Submit(context.Background(), client.SubmitRequest{Type: "echo", Key: "same"})
		require.NoError(t, err)
		assert.Equal(t, client.Submitted{ID: 7, Duplicate: true}, sub)
	})
	t.Run("refused locally", func(t *testing.T) {
		f := mustStartFakeServer(t)
		c, _ := mustDial(t, f, client.Options{})
		for _, req := range []client.SubmitRequest{
			{}, {Type: "x", Priority: -1}, {Type: "x", Priority: 10}, {Type: "x", MaxAttempts: -1}, {Type: "x", Timeout: -time.Second},
			{Type: "x", Args: map[string]string{"Bad": "upper case"}}, {Type: "x", Key: "\xff"},
		} {
			_, err := c.Submit(context.Background(), req)
			assert.Error(t, err, "%+v", req)
		}
	})
}

func TestClient_SubmitWait(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})
	reqs := make(chan string, 1)
	go func() {
		m := sc.expect("submit")
		assert.Equal(t, "true", m.Value("wait"))
		sc.send("submitted", "req", m.Value("req"), "task_id", "9")
		reqs <- m.Value("req")
	}()
	type ret struct {
		sub  client.Submitted
		done client.Done
		err  error
	}
	got := make(chan ret, 1)
	go func() {
		sub, done, err := c.SubmitWait(context.Background(), client.SubmitRequest{Type: "echo"})
		got <- ret{sub, done, err}
	}()
	req := <-reqs

	// Meanwhile other requests go on.
	go func() {
		m := sc.expect("stats")
		sc.send("stats", "req", m.Value("req"), "executors", "2", "state_version", "5", "uptime_ms", "1500",
			"tasks.pending", "3", "tasks.running", "0", "future", "x")
	}()
	st, err := c.Stats(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(2), st.Executors)
	assert.Equal(t, uint64(5), st.StateVersion)
	assert.Equal(t, 1500*time.Millisecond, st.Uptime)
	assert.Equal(t, map[string]uint64{"pending": 3, "running": 0}, st.Tasks)
	assert.Equal(t, map[string]string{"future": "x"}, st.Extra)

	select {
	case <-got:
		t.Fatal("SubmitWait returned before done")
	default:
	}
	sc.send("done", "req", req, "task_id", "9", "state", "succeeded", "out.k", "v", "out.n", "1")
	select {
	case r := <-got:
		require.NoError(t, r.err)
		assert.Equal(t, client.Submitted{ID: 9}, r.sub)
		assert.Equal(t, client.Done{ID: 9, State: "succeeded", Out: map[string]string{"k": "v", "n": "1"}}, r.done)
	case <-time.After(waitFor):
		t.Fatal("SubmitWait did not return")
	}

	t.Run("failed task", func(t *testing.T) {
		go func() {
			m := sc.expect("submit")
			sc.send("submitted", "req", m.Value("req"), "task_id", "10")
			sc.send("done", "req", m.Value("req"), "task_id", "10", "state", "failed", "error", "exit status 3")
		}()
		sub, done, err := c.SubmitWait(context.Background(), client.SubmitRequest{Type: "exec"})
		require.NoError(t, err)
		assert.Equal(t, uint64(10), sub.ID)
		assert.Equal(t, client.Done{ID: 10, State: "failed", Error: "exit status 3", Out: map[string]string{}}, done)
	})
	t.Run("refused", func(t *testing.T) {
		go func() {
			m := sc.expect("submit")
			sc.send("error", "req", m.Value("req"), "code", "queue_full", "message", "try later")
		}()
		_, _, err := c.SubmitWait(context.Background(), client.SubmitRequest{Type: "exec"})
		assert.True(t, client.IsQueueFull(err), "%v", err)
	})
	t.Run("context ends after submitted", func(t *testing.T) {
		go func() {
			m := sc.expect("submit")
			sc.send("submitted", "req", m.Value("req"), "task_id", "11")
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		sub, _, err := c.SubmitWait(ctx, client.SubmitRequest{Type: "exec"})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, uint64(11), sub.ID, "the id is known")
	})
}

func TestClient_Pipelined(t *testing.T) {
	const n = 64
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})
	go func() {
		// Read every request before answering any, then answer in reverse.
		reqs := make([]string, n)
		ids := make([]string, n)
		seen := map[string]bool{}
		for i := range n {
			m := sc.expect("query")
			reqs[i], ids[i] = m.Value("req"), m.Value("task_id")
			assert.LessOrEqual(t, len(reqs[i]), wire.MaxReqLen)
			assert.False(t, seen[reqs[i]], "req %s reused", reqs[i])
			seen[reqs[i]] = true
		}
		for i := n - 1; i >= 0; i-- {
			// Versions are uint64: a restart epoch fills the high 32 bits.
			sc.send("task_state", "req", reqs[i], "task_id", ids[i], "version", "18446744073709551615", "state", "running",
				"attempt", "1", "max_attempts", "3", "task_type", "t"+ids[i], "executor_id", "w1",
				"created_ms", "1700000000000", "updated_ms", "1700000000500", "trace_id", "tr", "out.x", ids[i])
		}
	}()
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		wg.Go(func() {
			ts, err := c.Query(context.Background(), uint64(i))
			if !assert.NoError(t, err) {
				return
			}
			id := fmt.Sprint(i)
			assert.Equal(t, client.TaskState{ID: uint64(i), Version: 1<<64 - 1, State: "running", Attempt: 1, MaxAttempts: 3,
				Type: "t" + id, ExecutorID: "w1", Out: map[string]string{"x": id}, TraceID: "tr",
				Created: time.UnixMilli(1700000000000), Updated: time.UnixMilli(1700000000500)}, ts)
		})
	}
	wg.Wait()
}

func TestClient_Requests(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})
	ctx := context.Background()

	t.Run("cancel", func(t *testing.T) {
		go func() {
			m := sc.expect("cancel")
			assert.Equal(t, "12", m.Value("task_id"))
			sc.send("cancelled", "req", m.Value("req"), "task_id", "12")
		}()
		require.NoError(t, c.Cancel(ctx, 12))
	})
	t.Run("list", func(t *testing.T) {
		go func() {
			m := sc.expect("list")
			assert.Equal(t, "pending", m.Value("state"))
			assert.Equal(t, "2", m.Value("limit"))
			assert.Equal(t, "4", m.Value("after"))
			sc.send("tasks", "req", m.Value("req"), "count", "2", "ids", "5,6", "next", "6")
		}()
		ids, next, err := c.List(ctx, "pending", 2, 4)
		require.NoError(t, err)
		assert.Equal(t, []uint64{5, 6}, ids)
		assert.Equal(t, uint64(6), next)
	})
	t.Run("list defaults", func(t *testing.T) {
		go func() {
			m := sc.expect("list")
			assert.False(t, m.Has("limit"))
			assert.False(t, m.Has("after"))
			sc.send("tasks", "req", m.Value("req"), "count", "0", "ids", "")
		}()
		ids, next, err := c.List(ctx, "failed", 0, 0)
		require.NoError(t, err)
		assert.Empty(t, ids)
		assert.Zero(t, next)
	})
	t.Run("list all follows next", func(t *testing.T) {
		go func() {
			pages := []struct{ after, ids, next string }{{"", "1,2", "2"}, {"2", "3,4", "4"}, {"4", "5", ""}}
			for _, p := range pages {
				m := sc.expect("list")
				assert.Equal(t, "1000", m.Value("limit"))
				assert.Equal(t, p.after, m.Value("after"))
				kv := []string{"req", m.Value("req"), "count", "2", "ids", p.ids}
				if p.next != "" {
					kv = append(kv, "next", p.next)
				}
				sc.send("tasks", kv...)
			}
		}()
		ids, err := c.ListAll(ctx, "succeeded")
		require.NoError(t, err)
		assert.Equal(t, []uint64{1, 2, 3, 4, 5}, ids)
	})
	t.Run("state_get", func(t *testing.T) {
		go func() {
			m := sc.expect("state_get")
			assert.Equal(t, "a,b.c", m.Value("keys"))
			sc.send("state", "req", m.Value("req"), "state_version", "8", "state.a", "1")
		}()
		vals, version, err := c.StateGet(ctx, "a", "b.c")
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"a": "1"}, vals)
		assert.Equal(t, uint64(8), version)
		_, _, err = c.StateGet(ctx, "Bad")
		assert.Error(t, err)
	})
	t.Run("state_get all", func(t *testing.T) {
		go func() {
			m := sc.expect("state_get")
			assert.False(t, m.Has("keys"))
			sc.send("state", "req", m.Value("req"), "state_version", "0")
		}()
		vals, version, err := c.StateGet(ctx)
		require.NoError(t, err)
		assert.Empty(t, vals)
		assert.Zero(t, version)
	})
	t.Run("debug", func(t *testing.T) {
		go func() {
			m := sc.expect("debug")
			assert.Equal(t, "true", m.Value("on"))
			sc.send("debug_ok", "req", m.Value("req"))
		}()
		require.NoError(t, c.Debug(ctx, true))
	})
}

// A Watch's Wait returns when the watch is closed; once a Wait has ended
// without a done (closed, or its context ended), every later Wait returns
// that at once; concurrent Waits wait in turn and share the outcome.
func TestWatch_CloseAndLaterWaits(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})
	submitted := func(id string) string {
		m := sc.expect("submit")
		sc.send("submitted", "req", m.Value("req"), "task_id", id)
		return m.Value("req")
	}
	watch := func(id string) (*client.Watch, string) {
		reqc := make(chan string, 1)
		go func() { reqc <- submitted(id) }()
		w, err := c.SubmitWatch(context.Background(), client.SubmitRequest{Type: "x"})
		require.NoError(t, err)
		return w, <-reqc
	}
	waitIn := func(w *client.Watch, ctx context.Context) <-chan error {
		errc := make(chan error, 1)
		go func() { _, err := w.Wait(ctx); errc <- err }()
		return errc
	}
	returns := func(errc <-chan error, what string) error {
		t.Helper()
		select {
		case err := <-errc:
			return err
		case <-time.After(waitFor):
			t.Fatalf("%s: Wait did not return", what)
			return nil
		}
	}

	w, _ := watch("1")
	errc := waitIn(w, context.Background())
	time.Sleep(20 * time.Millisecond)
	w.Close()
	assert.ErrorContains(t, returns(errc, "Close"), "watch closed")
	assert.ErrorContains(t, returns(waitIn(w, context.Background()), "after Close"), "watch closed")

	w, req := watch("2")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, returns(waitIn(w, ctx), "deadline"), context.DeadlineExceeded)
	sc.send("done", "req", req, "task_id", "2", "state", "succeeded")
	assert.ErrorIs(t, returns(waitIn(w, context.Background()), "after the deadline"), context.DeadlineExceeded,
		"the watch is over: a done arriving later is not waited for")

	w, req = watch("3")
	first, second := waitIn(w, context.Background()), waitIn(w, context.Background())
	time.Sleep(20 * time.Millisecond)
	sc.send("done", "req", req, "task_id", "3", "state", "failed")
	assert.NoError(t, returns(first, "first of two"))
	assert.NoError(t, returns(second, "second of two"))
	d, err := w.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "failed", d.State)

	// A Wait with a deadline, beside one without, returns at its deadline
	// (it used to queue behind the other for as long as the task ran), and
	// ends the watch for both.
	w, _ = watch("4")
	unbounded := waitIn(w, context.Background())
	time.Sleep(20 * time.Millisecond)
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	assert.ErrorIs(t, returns(waitIn(w, ctx), "bounded beside unbounded"), context.DeadlineExceeded)
	assert.Less(t, time.Since(start), waitFor/2, "returned at its own deadline")
	assert.ErrorIs(t, returns(unbounded, "unbounded, once the watch is over"), context.DeadlineExceeded)
}
