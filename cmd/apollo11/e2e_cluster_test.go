package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/testbin"
	"github.com/apollo11/apollo11/wire"
)

// member is one `apollo11 maincontrol` of a real three-process cluster.
type member struct {
	addr, raft, dir string
	proc            *testbin.Proc
}

type procCluster struct {
	t       testing.TB
	bin     string
	members []*member
}

// startProcCluster starts n members on loopback, each its own process,
// each with the flags extra.
func startProcCluster(t testing.TB, bin string, n int, extra ...string) *procCluster {
	pc := &procCluster{t: t, bin: bin}
	var list []string
	for i := range n {
		m := &member{addr: testbin.FreeAddr(t), raft: testbin.FreeAddr(t), dir: filepath.Join(t.TempDir(), fmt.Sprint(i))}
		pc.members = append(pc.members, m)
		list = append(list, m.addr+"="+m.raft)
	}
	for _, m := range pc.members {
		m.proc = testbin.StartMaincontrolEnv(t, bin, nil, m.addr, append([]string{"--data-dir", m.dir,
			"--raft-listen", m.raft, "--cluster-members", strings.Join(list, ",")}, extra...)...)
	}
	return pc
}

// wirePeer is a raw wire connection.
type wirePeer struct {
	c net.Conn
	r *wire.Reader
	w *wire.Writer
}

func dialWire(addr string) (*wirePeer, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	p := &wirePeer{c: c, r: wire.NewReader(c, 0), w: wire.NewWriter(c, 0)}
	if m, err := p.recv(); err != nil || m.Type() != "welcome" {
		c.Close()
		return nil, fmt.Errorf("no welcome: %v", err)
	}
	return p, nil
}

func (p *wirePeer) send(typ string, kv ...string) error {
	m := wire.NewMessage(wire.Kind(typ))
	for i := 0; i+1 < len(kv); i += 2 {
		m.Set(kv[i], kv[i+1])
	}
	return p.w.Send(m)
}

func (p *wirePeer) recv() (*wire.Message, error) {
	_ = p.c.SetReadDeadline(time.Now().Add(patience.Scale(10 * time.Second)))
	m, err := p.r.ReadMessage()
	if err != nil {
		return nil, err
	}
	return m.Clone(), nil
}

// leader waits for the member that says it leads, and connects a client.
func (pc *procCluster) leader(timeout time.Duration) (*member, *wirePeer) {
	pc.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, m := range pc.members {
			if m.proc.Exited() {
				continue
			}
			p, err := dialWire(m.addr)
			if err != nil {
				continue
			}
			if p.send("hello", "req", "h") == nil {
				if ok, err := p.recv(); err == nil && ok.Value("role") == "leader" {
					return m, p
				}
			}
			p.c.Close()
		}
		time.Sleep(5 * time.Millisecond)
	}
	pc.t.Fatalf("no leader within %v", timeout)
	return nil, nil
}

// TestCluster_KillLeaderUnderSubmits kills -9 the leader of three real
// processes while a client submits. Every confirmed submit survives, a
// new leader takes submits, and a task whose result was accepted before
// the kill is never dispatched again.
func TestCluster_KillLeaderUnderSubmits(t *testing.T) {
	bin := testbin.Build(t)
	pc := startProcCluster(t, bin, 3, testbin.LoadedRaft()...)
	lead, cl := pc.leader(patience.Scale(30 * time.Second))

	// An executor's result is accepted by the first leader.
	ex, err := dialWire(lead.addr)
	require.NoError(t, err)
	require.NoError(t, cl.send("submit", "req", "done", "task_type", "e2e", "key", "done"))
	m, err := cl.recv()
	require.NoError(t, err)
	doneID := m.Value("task_id")
	require.NoError(t, ex.send("register", "executor_id", "ex1", "task_types", "e2e", "slots", "1"))
	_, err = ex.recv() // registered
	require.NoError(t, err)
	task, err := ex.recv()
	require.NoError(t, err)
	require.Equal(t, "task", task.Type())
	require.Equal(t, doneID, task.Value("task_id"))
	require.NoError(t, ex.send("started", "task_id", doneID, "version", task.Value("version")))
	require.NoError(t, ex.send("result", "task_id", doneID, "version", task.Value("version"), "status", "succeeded"))
	ack, err := ex.recv()
	require.NoError(t, err)
	require.Equal(t, "true", ack.Value("accepted"), "%v", ack)
	ex.c.Close()

	// A client pipelines keyed submits; the leader dies under them.
	confirmed := map[string]string{} // key -> task id
	sent := 0
	killed := false
	for {
		if !killed && len(confirmed) >= 300 {
			lead.proc.Kill()
			killed = true
		}
		if err := cl.send("submit", "req", fmt.Sprint(sent), "task_type", "other", "key", fmt.Sprint("k", sent)); err != nil {
			break
		}
		sent++
		m, err := cl.recv()
		if err != nil {
			break
		}
		if m.Type() == "submitted" {
			confirmed["k"+m.Value("req")] = m.Value("task_id")
		}
	}
	require.True(t, killed, "the leader's connection ended before the kill")
	require.GreaterOrEqual(t, len(confirmed), 300)

	nl, cl := pc.leader(patience.Scale(30 * time.Second))
	require.NotEqual(t, lead, nl)
	require.NoError(t, cl.send("submit", "req", "after", "task_type", "other"))
	m, err = cl.recv()
	require.NoError(t, err)
	assert.Equal(t, "submitted", m.Type(), "%v", m)
	for key, id := range confirmed {
		require.NoError(t, cl.send("submit", "req", key, "task_type", "other", "key", key))
		m, err := cl.recv()
		require.NoError(t, err)
		require.Equal(t, id, m.Value("task_id"), "confirmed submit %s lost: %v", key, m)
		require.Equal(t, "true", m.Value("duplicate"))
	}
	require.NoError(t, cl.send("query", "req", "q", "task_id", doneID))
	m, err = cl.recv()
	require.NoError(t, err)
	assert.Equal(t, "succeeded", m.Value("state"))

	// The executor comes back to the new leader: the task it finished is
	// not sent again.
	ex, err = dialWire(nl.addr)
	require.NoError(t, err)
	defer ex.c.Close()
	require.NoError(t, ex.send("register", "executor_id", "ex1", "task_types", "e2e", "slots", "4", "running", ""))
	m, err = ex.recv()
	require.NoError(t, err)
	require.Equal(t, "registered", m.Type(), "%v", m)
	require.NoError(t, cl.send("submit", "req", "probe", "task_type", "e2e"))
	probe, err := cl.recv()
	require.NoError(t, err)
	for {
		m, err := ex.recv()
		require.NoError(t, err)
		if m.Type() != "task" {
			continue
		}
		require.NotEqual(t, doneID, m.Value("task_id"), "a task whose result was accepted ran again")
		if m.Value("task_id") == probe.Value("task_id") {
			break
		}
	}
}

// acceptedSubmit polls the live members until one takes a submit as
// leader, and returns when it confirmed it.
func (pc *procCluster) acceptedSubmit(timeout time.Duration) (*member, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, m := range pc.members {
			if m.proc.Exited() {
				continue
			}
			p, err := dialWire(m.addr)
			if err != nil {
				continue
			}
			ok := p.send("hello", "req", "h") == nil
			var r *wire.Message
			if ok {
				r, err = p.recv()
				ok = err == nil && r.Value("role") == "leader"
			}
			if ok && p.send("submit", "req", "s", "task_type", "probe") == nil {
				if r, err = p.recv(); err == nil && r.Type() == "submitted" {
					p.c.Close()
					return m, nil
				}
			}
			p.c.Close()
		}
		time.Sleep(time.Millisecond)
	}
	return nil, fmt.Errorf("no member accepted a submit within %v", timeout)
}

// BenchmarkCluster_LeaderFailover times kill -9 of the leader of three
// real processes until a new leader confirms a submit, with the default
// Raft timeouts. The killed member restarts between rounds.
//
//	go test ./cmd/apollo11 -run '^$' -bench Cluster_LeaderFailover -benchtime 20x
//
// BenchmarkCluster_LeaderFailover times a leader's end to a new leader's
// submitted: a kill -9, or a SIGTERM, which hands the leadership on.
func BenchmarkCluster_LeaderFailover(b *testing.B) {
	b.Run("kill", func(b *testing.B) { benchFailover(b, (*testbin.Proc).Kill) })
	b.Run("sigterm", func(b *testing.B) {
		benchFailover(b, func(p *testbin.Proc) { p.Signal(syscall.SIGTERM) })
	})
}

func benchFailover(b *testing.B, end func(*testbin.Proc)) {
	bin := testbin.Build(b)
	pc := startProcCluster(b, bin, 3)
	var list []string
	for _, m := range pc.members {
		list = append(list, m.addr+"="+m.raft)
	}
	var worst, total time.Duration
	b.ResetTimer()
	for range b.N {
		lead, err := pc.acceptedSubmit(30 * time.Second)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		end(lead.proc)
		if _, err := pc.acceptedSubmit(30 * time.Second); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		total += d
		worst = max(worst, d)
		b.StopTimer()
		_ = lead.proc.Wait(30 * time.Second) // its port and data dir are free again
		lead.proc = testbin.StartMaincontrolEnv(b, bin, nil, lead.addr, "--data-dir", lead.dir,
			"--raft-listen", lead.raft, "--cluster-members", strings.Join(list, ","))
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/failover")
	b.ReportMetric(float64(worst.Milliseconds()), "worst-ms")
}
