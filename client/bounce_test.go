package client_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/wire"
)

// leftByClient checks that the client closes sc, having sent nothing
// more on it.
func leftByClient(t *testing.T, sc *srvConn) {
	t.Helper()
	require.NoError(t, sc.Net.SetReadDeadline(time.Now().Add(waitFor)))
	m, err := sc.R.ReadMessage()
	require.ErrorIs(t, err, io.EOF, "the client left the member, sending nothing more (got %v)", m)
}

// nothingMore checks that the next frame on sc is a fresh stats, not a
// request sent a second time.
func nothingMore(t *testing.T, c *client.Client, sc *srvConn) {
	t.Helper()
	go func() {
		m := sc.expect("stats")
		sc.send("stats", "req", m.Value("req"), "uptime_ms", "1")
	}()
	_, err := c.Stats(context.Background())
	require.NoError(t, err)
}

// A member answers each request by the role it has when it arrives. It
// refused a submit, then served a cancel and a submit sent after it, and
// refused a query. The two it served get their real replies, not an
// unknown outcome. Only the two it refused go to the leader, once each. A
// call made after the refusal waits for the leader too.
func TestBounce_RepliesBehindRefusalReachCallers(t *testing.T) {
	member := mustStartFakeServer(t)
	leader := mustStartFakeServer(t)
	c, sc := mustDialList(t, member, []string{leader.addr()})
	ctx := context.Background()
	ch := make(chan outcome, 5)
	submit := func(name string) {
		sub, err := c.Submit(ctx, client.SubmitRequest{Type: name})
		if err == nil && sub.ID != map[string]uint64{"a": 1, "d": 4}[name] {
			err = errors.New("wrong id")
		}
		ch <- outcome{name, err}
	}
	go submit("a")
	a := sc.expect("submit")
	go func() {
		_, err := c.Query(ctx, 7)
		ch <- outcome{"b", err}
	}()
	b := sc.expect("query")
	go func() { ch <- outcome{"c", c.Cancel(ctx, 3)} }()
	cancel := sc.expect("cancel")
	go submit("d")
	d := sc.expect("submit")

	sc.send("error", "req", a.Value("req"), "code", "not_leader", "leader", leader.addr())
	sc.send("cancelled", "req", cancel.Value("req"))
	got := collect(t, ch, 1)
	assert.Equal(t, "c", got[0].name)
	assert.NoError(t, got[0].err, "served before the refusal reached the client")
	go func() {
		_, err := c.Stats(ctx)
		ch <- outcome{"e", err}
	}()
	sc.send("submitted", "req", d.Value("req"), "task_id", "4")
	sc.send("error", "req", b.Value("req"), "code", "not_leader", "leader", leader.addr())
	got = collect(t, ch, 1)
	assert.Equal(t, "d", got[0].name)
	assert.NoError(t, got[0].err, "served after the refusal: its reply is kept")
	leftByClient(t, sc)

	sc2 := leader.accept(t)
	sc2.hello()
	for range 3 {
		m := sc2.expect("")
		switch m.Type() {
		case "submit":
			assert.Equal(t, "a", m.Value("task_type"), "only the refused submit")
			sc2.send("submitted", "req", m.Value("req"), "task_id", "1")
		case "query":
			taskState(sc2, m, "running")
		case "stats":
			sc2.send("stats", "req", m.Value("req"), "uptime_ms", "1")
		default:
			t.Fatalf("unexpected %s", m)
		}
	}
	for _, o := range collect(t, ch, 3) {
		assert.NoError(t, o.err, o.name)
	}
	nothingMore(t, c, sc2)
	member.NoConn(t, 100*time.Millisecond)
}

// A watch past its `submitted` waits for `done`, which may take long: a
// refusal does not wait for it. The client leaves at once, and the watch
// follows its task on the leader.
func TestBounce_WatchPastSubmittedNotWaitedFor(t *testing.T) {
	defer client.SetBounceGrace(time.Hour)()
	member := mustStartFakeServer(t)
	leader := mustStartFakeServer(t)
	c, sc := mustDialList(t, member, []string{leader.addr()})
	ctx := context.Background()
	go func() {
		m := sc.expect("submit")
		sc.send("submitted", "req", m.Value("req"), "task_id", "4")
	}()
	w, err := c.SubmitWatch(ctx, client.SubmitRequest{Type: "x"})
	require.NoError(t, err)
	defer w.Close()
	ch := make(chan outcome, 1)
	go func() {
		_, err := c.Query(ctx, 7)
		ch <- outcome{"query", err}
	}()
	q := sc.expect("query")
	sc.send("error", "req", q.Value("req"), "code", "not_leader", "leader", leader.addr())
	leftByClient(t, sc)

	sc2 := leader.accept(t)
	sc2.hello()
	m := sc2.expect("query")
	assert.Equal(t, "7", m.Value("task_id"))
	taskState(sc2, m, "running")
	require.NoError(t, collect(t, ch, 1)[0].err)
	go func() {
		m := sc2.expect("query")
		assert.Equal(t, "4", m.Value("task_id"), "the watch follows its task by id")
		taskState(sc2, m, "succeeded")
	}()
	done, err := w.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, "succeeded", done.State)
}

// A member that leaves requests sent before its refusal unanswered is left
// after a grace period. Then a cancel's outcome is unknown, as after any
// loss. A keyed submit is sent to the leader, as is the refused submit.
func TestBounce_UnansweredLeftAfterGrace(t *testing.T) {
	defer client.SetBounceGrace(200 * time.Millisecond)()
	member := mustStartFakeServer(t)
	leader := mustStartFakeServer(t)
	c, sc := mustDialList(t, member, []string{leader.addr()})
	ctx := context.Background()
	ch := make(chan outcome, 3)
	go func() {
		_, err := c.Submit(ctx, client.SubmitRequest{Type: "a"})
		ch <- outcome{"a", err}
	}()
	a := sc.expect("submit")
	go func() { ch <- outcome{"b", c.Cancel(ctx, 3)} }()
	sc.expect("cancel")
	go func() {
		_, err := c.Submit(ctx, client.SubmitRequest{Type: "c", Key: "k"})
		ch <- outcome{"c", err}
	}()
	sc.expect("submit")
	sc.send("error", "req", a.Value("req"), "code", "not_leader", "leader", leader.addr())

	got := collect(t, ch, 1)
	assert.Equal(t, "b", got[0].name)
	assert.ErrorIs(t, got[0].err, client.ErrOutcomeUnknown)
	assert.ErrorContains(t, got[0].err, "no reply within 200ms to the requests sent before the refusal")
	leftByClient(t, sc)

	sc2 := leader.accept(t)
	sc2.hello()
	for _, typ := range []string{"a", "c"} { // in their first order
		m := sc2.expect("submit")
		assert.Equal(t, typ, m.Value("task_type"))
		sc2.send("submitted", "req", m.Value("req"), "task_id", "1")
	}
	for _, o := range collect(t, ch, 2) {
		assert.NoError(t, o.err, o.name)
	}
	nothingMore(t, c, sc2)
}

// A refused request that cannot reach a leader, as the client gives up,
// says it was not applied: the refusal is its outcome. It is not reported
// as unknown.
func TestBounce_RefusedNotAppliedWhenNoLeader(t *testing.T) {
	member := mustStartFakeServer(t)
	rc := client.Reconnect{MinDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond, GiveUpAfter: 300 * time.Millisecond}
	c, sc := mustDial(t, member, client.Options{Reconnect: rc})
	ch := make(chan outcome, 1)
	go func() {
		_, err := c.Submit(context.Background(), client.SubmitRequest{Type: "a"})
		ch <- outcome{"a", err}
	}()
	a := sc.expect("submit")
	sc.send("error", "req", a.Value("req"), "code", "not_leader", "message", "no leader yet")
	leftByClient(t, sc)
	// The member accepts again but never answers hello: no leader.
	err := collect(t, ch, 1)[0].err
	require.Error(t, err)
	assert.ErrorIs(t, err, client.ErrConnectionLost)
	assert.NotErrorIs(t, err, client.ErrOutcomeUnknown)
	assert.NotErrorIs(t, err, client.ErrNoReply)
	assert.True(t, client.IsCode(err, wire.CodeNotLeader), "%v", err)
	assert.ErrorContains(t, err, "not applied ("+member.addr()+" refused it: main control error not_leader: no leader yet)")
}

// The caller of the last request sent before a refusal gives up. No reply
// needs waiting for any more, so the client leaves the member at once,
// not after the grace period.
func TestBounce_LastCallerGivesUp(t *testing.T) {
	defer client.SetBounceGrace(time.Hour)()
	member := mustStartFakeServer(t)
	leader := mustStartFakeServer(t)
	c, sc := mustDialList(t, member, []string{leader.addr()})
	ch := make(chan outcome, 3)
	go func() {
		_, err := c.Stats(context.Background())
		ch <- outcome{"a", err}
	}()
	a := sc.expect("stats")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, err := c.Query(ctx, 7)
		ch <- outcome{"b", err}
	}()
	sc.expect("query")
	go func() { ch <- outcome{"c", c.Cancel(context.Background(), 3)} }()
	cn := sc.expect("cancel")
	sc.send("error", "req", a.Value("req"), "code", "not_leader", "leader", leader.addr())
	sc.send("cancelled", "req", cn.Value("req")) // behind the refusal: it was seen
	got := collect(t, ch, 1)
	require.Equal(t, "c", got[0].name)
	require.NoError(t, got[0].err)
	cancel()
	got = collect(t, ch, 1)
	require.Equal(t, "b", got[0].name)
	assert.ErrorIs(t, got[0].err, context.Canceled)
	leftByClient(t, sc)

	sc2 := leader.accept(t)
	sc2.hello()
	m := sc2.expect("stats")
	sc2.send("stats", "req", m.Value("req"), "uptime_ms", "1")
	require.NoError(t, collect(t, ch, 1)[0].err)
}
