package maincontrol_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/testbin"
	"github.com/apollo11/apollo11/wire"
)

// runPeer is a raw wire connection for the run restart test.
type runPeer struct {
	t *testing.T
	r *wire.Reader
	w *wire.Writer
}

func dialRunPeer(t *testing.T, ctx context.Context, addr, typ string, kv ...string) *runPeer {
	t.Helper()
	_, r, w, err := dialHello(ctx, addr, typ, kv...)
	require.NoError(t, err)
	return &runPeer{t: t, r: r, w: w}
}

func (p *runPeer) send(typ string, kv ...string) {
	p.t.Helper()
	m := wire.NewMessage(wire.Kind(typ))
	for i := 0; i+1 < len(kv); i += 2 {
		m.Set(kv[i], kv[i+1])
	}
	require.NoError(p.t, p.w.Send(m))
}

// next returns the next frame of type typ, skipping others (pongs,
// result_acks).
func (p *runPeer) next(typ string) *wire.Message {
	p.t.Helper()
	for {
		m, err := p.r.Next()
		require.NoError(p.t, err)
		if m.Type() == typ {
			return m.Clone()
		}
		require.NotEqual(p.t, "error", m.Type(), "%s", m)
	}
}

// runOne takes the next task, reports it done with outputs, and returns
// its frame.
func (p *runPeer) runOne(kv ...string) *wire.Message {
	p.t.Helper()
	m := p.next("task")
	id, ver := m.Value("task_id"), m.Value("version")
	p.send("started", "task_id", id, "version", ver)
	p.send("result", append([]string{"task_id", id, "version", ver, "status", "succeeded"}, kv...)...)
	return m
}

// TestRuns_SurviveKill9 shows a run, its filled-in references and its
// state surviving kill -9 of the real binary, twice.
func TestRuns_SurviveKill9(t *testing.T) {
	bin := testbin.Build(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The executors below send no heartbeats, so the timeout stretches
	// with the machine's load.
	hb := patience.Scale(2 * time.Second).String()
	start := func() *testbin.Proc {
		return testbin.StartMaincontrol(t, bin, "--data-dir", dir, "--snapshot-every", "3", "--heartbeat-timeout", hb, "--log-level", "warn")
	}
	submit := []string{"req", "r", "name", "restart", "key", "nightly-1", "steps", "3",
		"step.0.id", "fetch", "step.0.type", "t",
		"step.1.id", "use", "step.1.type", "t", "step.1.depends_on", "fetch", "step.1.arg.path", "${steps.fetch.out.path}",
		"step.2.id", "last", "step.2.type", "t", "step.2.depends_on", "use"}

	p := start()
	cl := dialRunPeer(t, ctx, p.Addr, "hello", "req", "h")
	cl.send("run_submit", submit...)
	sub := cl.next("run_submitted")
	require.Equal(t, "1", sub.Value("run_id"))
	ids := sub.Value("task_ids")
	ex := dialRunPeer(t, ctx, p.Addr, "register", "executor_id", "ex1", "task_types", "t", "slots", "1")
	ex.runOne("out.path", "/data/batch-7")
	// The ack of the first result means it is durable; wait for the
	// second step's dispatch, which follows its filled-in release.
	second := ex.next("task")
	require.Equal(t, "/data/batch-7", second.Value("arg.path"))
	p.Kill()

	p = start()
	cl = dialRunPeer(t, ctx, p.Addr, "hello", "req", "h")
	cl.send("run_query", "req", "q", "key", "nightly-1")
	st := cl.next("run_state")
	require.Equal(t, "running", st.Value("state"), "%s", st)
	require.Equal(t, "succeeded", st.Value("step.0.state"))
	cl.send("run_query", "req", "q", "run_id", "1", "step", "use")
	require.Equal(t, "/data/batch-7", cl.next("run_step").Value("arg.path"), "the filled-in args are durable")
	cl.send("run_submit", submit...)
	dup := cl.next("run_submitted")
	require.Equal(t, "true", dup.Value("duplicate"))
	require.Equal(t, ids, dup.Value("task_ids"))
	cl.send("run_submit", append(submit[2:], "req", "w", "wait", "true")...)
	cl.next("run_submitted")
	// ex2 registers once the lost dispatch of step 1 is taken back, so it
	// never sits silent for a heartbeat timeout waiting for it. Before,
	// a late tick could declare it lost with that dispatch.
	use := strings.Split(ids, ",")[1]
	giveUp := time.Now().Add(patience.Scale(time.Minute))
	for {
		cl.send("query", "req", "p", "task_id", use)
		if cl.next("task_state").Value("state") == "pending" {
			break
		}
		require.True(t, time.Now().Before(giveUp), "step use is never taken back from the lost executor")
		time.Sleep(20 * time.Millisecond)
	}
	ex = dialRunPeer(t, ctx, p.Addr, "register", "executor_id", "ex2", "task_types", "t", "slots", "1")
	require.Equal(t, "/data/batch-7", ex.runOne().Value("arg.path"))
	ex.runOne()
	done := cl.next("run_done")
	require.Equal(t, "succeeded", done.Value("state"))
	p.Kill()

	p = start()
	defer p.Kill()
	cl = dialRunPeer(t, ctx, p.Addr, "hello", "req", "h")
	cl.send("run_query", "req", "q", "run_id", "1")
	st = cl.next("run_state")
	require.Equal(t, "succeeded", st.Value("state"))
	cl.send("run_list", "req", "l", "state", "succeeded")
	require.Equal(t, "1", cl.next("runs").Value("ids"))
}
