package maincontrol_test

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/wire"
)

// Load over real sockets: many connections at once, and deep pipelining
// on one.

// submitAndQuery is one client's whole life, without testing.T (it runs on
// its own goroutine): welcome, hello, submit, query.
func submitAndQuery(addr string, i int) (uint64, error) {
	c, err := net.DialTimeout("tcp", addr, patience.Scale(10*time.Second))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(patience.Scale(30 * time.Second)))
	r, w := wire.NewReader(c, 0), wire.NewWriter(c, 0)
	roundTrip := func(m *wire.Message, want string) (*wire.Message, error) {
		if m != nil {
			if err := w.Send(m); err != nil {
				return nil, err
			}
		}
		got, err := r.ReadMessage()
		if err != nil {
			return nil, err
		}
		if got.Type() != want {
			return nil, fmt.Errorf("want %s, got %s", want, got)
		}
		return got, nil
	}
	req := "c" + strconv.Itoa(i)
	if _, err := roundTrip(nil, "welcome"); err != nil {
		return 0, err
	}
	if _, err := roundTrip(wire.NewMessage("hello").Set("req", req), "hello_ok"); err != nil {
		return 0, err
	}
	sub, err := roundTrip(wire.NewMessage("submit").Set("req", req).Set("task_type", "load").Set("arg.i", strconv.Itoa(i)), "submitted")
	if err != nil {
		return 0, err
	}
	id, err := sub.Uint("task_id")
	if err != nil || sub.Value("req") != req {
		return 0, fmt.Errorf("bad submitted: %s", sub)
	}
	st, err := roundTrip(wire.NewMessage("query").Set("req", req).Set("task_id", sub.Value("task_id")), "task_state")
	if err != nil {
		return 0, err
	}
	if st.Value("req") != req || st.Value("state") != "pending" || st.Value("task_id") != sub.Value("task_id") {
		return 0, fmt.Errorf("bad task_state: %s", st)
	}
	return id, nil
}

// Two thousand sockets at once starve every test beside them: a load test.
func TestLoad_ThousandConcurrentClients(t *testing.T) {
	patience.LoadTests(t)
	t.Parallel()
	for _, loops := range []int{1, 4} {
		t.Run("event loops "+strconv.Itoa(loops), func(t *testing.T) {
			t.Parallel()
			concurrentClients(t, maincontrol.Config{EventLoops: loops})
		})
	}
}

func concurrentClients(t *testing.T, cfg maincontrol.Config) {
	const n = 1000
	addr := startServer(t, cfg)
	ids := make([]uint64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ids[i], errs[i] = submitAndQuery(addr, i)
		}()
	}
	close(start)
	wg.Wait()
	seen := make(map[uint64]bool, n)
	for i := 0; i < n; i++ {
		require.NoError(t, errs[i], "client %d", i)
		assert.False(t, seen[ids[i]], "task id %d given twice", ids[i])
		seen[ids[i]] = true
	}
	for id := uint64(1); id <= n; id++ {
		assert.True(t, seen[id], "ids are 1..%d, %d missing", n, id)
	}
	cl := clientPeer(t, addr)
	assert.Equal(t, strconv.Itoa(n), cl.request("stats", "req", "s").Value("tasks.pending"))
}

func TestLoad_TenThousandPipelinedSubmits(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		pipelinedSubmits(t, maincontrol.Config{})
	})
	t.Run("disk, reading paused past max-inflight", func(t *testing.T) {
		t.Parallel()
		pipelinedSubmits(t, maincontrol.Config{DataDir: t.TempDir(), MaxInflight: 100})
	})
	t.Run("read budget spent every few frames", func(t *testing.T) {
		// The loop then hands a connection's burst back in slices of
		// 64 frames: none may be lost or reordered on the way.
		t.Parallel()
		pipelinedSubmits(t, maincontrol.Config{ReadBudget: time.Nanosecond})
	})
}

func pipelinedSubmits(t *testing.T, cfg maincontrol.Config) {
	const n = 10000
	addr := startServer(t, cfg)
	cl := clientPeer(t, addr)
	var buf []byte
	for i := 0; i < n; i++ {
		buf = append(buf, mustFrame(t, "submit", "req", "p"+strconv.Itoa(i), "task_type", "pipe",
			"key", "k"+strconv.Itoa(i%(n-100)))...) // the last 100 are duplicates
	}
	writeErr := make(chan error, 1)
	go func() { // write all while reading, as a pipelining client would
		_ = cl.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
		_, err := cl.c.Write(buf)
		writeErr <- err
	}()
	got := make(map[string]*wire.Message, n)
	for i := 0; i < n; i++ {
		m := cl.expect("submitted")
		got[m.Value("req")] = m
	}
	require.NoError(t, <-writeErr)
	require.Len(t, got, n, "one reply per req")
	ids := map[string]bool{}
	for i := 0; i < n; i++ {
		m := got["p"+strconv.Itoa(i)]
		require.NotNil(t, m, "no reply to p%d", i)
		if i >= n-100 {
			assert.Equal(t, "true", m.Value("duplicate"))
			assert.Equal(t, got["p"+strconv.Itoa(i-(n-100))].Value("task_id"), m.Value("task_id"))
			continue
		}
		assert.False(t, m.Has("duplicate"))
		assert.Equal(t, strconv.Itoa(i+1), m.Value("task_id"), "ids in submit order")
		ids[m.Value("task_id")] = true
	}
	assert.Len(t, ids, n-100)
	assert.Equal(t, strconv.Itoa(n-100), cl.request("stats", "req", "s").Value("tasks.pending"))
}

// echoExecutor registers and answers every task with its arg.v as out.v,
// sending started and result in one write, until the connection closes.
func echoExecutor(t *testing.T, addr, id string, slots int) {
	p := executorPeer(t, addr, id, "echo", slots)
	go func() {
		_ = p.c.SetDeadline(time.Time{})
		for {
			m, err := p.r.ReadMessage()
			if err != nil {
				return
			}
			if m.Type() != "task" {
				continue
			}
			tid, ver := m.Value("task_id"), m.Value("version")
			_ = p.w.Write(wire.NewMessage("started").Set("task_id", tid).Set("version", ver))
			_ = p.w.Write(wire.NewMessage("result").Set("task_id", tid).Set("version", ver).
				Set("status", "succeeded").Set("out.v", m.Value("arg.v")).Set("state.add.n", "1"))
			if p.w.Flush() != nil {
				return
			}
		}
	}()
}

// Tasks through executors on several event loops with a data dir: every
// waiter gets its done, across loops, after the log is durable.
func TestLoad_TasksThroughExecutors(t *testing.T) {
	t.Parallel()
	const clients, perClient = 20, 50
	addr := startServer(t, maincontrol.Config{EventLoops: 4, DataDir: t.TempDir()})
	for i := 0; i < 4; i++ {
		echoExecutor(t, addr, "echo-"+strconv.Itoa(i), 8)
	}
	errs := make(chan error, clients)
	for c := 0; c < clients; c++ {
		go func() {
			errs <- func() error {
				conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					return err
				}
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
				r, w := wire.NewReader(conn, 0), wire.NewWriter(conn, 0)
				if _, err := r.ReadMessage(); err != nil {
					return err
				}
				_ = w.Write(wire.NewMessage("hello"))
				for i := 0; i < perClient; i++ {
					req := strconv.Itoa(c) + "-" + strconv.Itoa(i)
					_ = w.Write(wire.NewMessage("submit").Set("req", req).Set("task_type", "echo").
						Set("arg.v", req).Set("wait", "true"))
				}
				if err := w.Flush(); err != nil {
					return err
				}
				submitted, done := 0, 0
				for submitted < perClient || done < perClient {
					m, err := r.ReadMessage()
					if err != nil {
						return fmt.Errorf("client %d after %d submitted, %d done: %w", c, submitted, done, err)
					}
					switch m.Type() {
					case "hello_ok":
					case "submitted":
						submitted++
					case "done":
						done++
						if m.Value("state") != "succeeded" || m.Value("out.v") != m.Value("req") {
							return fmt.Errorf("bad done: %s", m)
						}
					default:
						return fmt.Errorf("unexpected %s", m)
					}
				}
				return nil
			}()
		}()
	}
	for c := 0; c < clients; c++ {
		require.NoError(t, <-errs)
	}
	cl := clientPeer(t, addr)
	st := cl.request("stats", "req", "s")
	assert.Equal(t, strconv.Itoa(clients*perClient), st.Value("tasks.succeeded"))
	assert.Equal(t, strconv.Itoa(clients*perClient), st.Value("state_version"))
	assert.Equal(t, strconv.Itoa(clients*perClient), cl.request("state_get", "req", "g").Value("state.n"))
}
