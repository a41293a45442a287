package client_test

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/wire"
)

// quick reconnects within tens of milliseconds, for the tests.
var quick = client.Reconnect{MinDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond}

type outcome struct {
	name string
	err  error
}

// collect reads n outcomes, sorted by name.
func collect(t *testing.T, ch <-chan outcome, n int) []outcome {
	t.Helper()
	var got []outcome
	for range n {
		select {
		case o := <-ch:
			got = append(got, o)
		case <-time.After(waitFor):
			t.Fatalf("only %d of %d calls returned: %v", len(got), n, got)
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i].name < got[j].name })
	return got
}

// taskState answers a query as the main control does.
func taskState(sc *srvConn, q *wire.Message, state string, kv ...string) {
	sc.send("task_state", append([]string{"req", q.Value("req"), "task_id", q.Value("task_id"), "version", "1",
		"state", state, "attempt", "1", "max_attempts", "3", "task_type", "x", "created_ms", "1", "updated_ms", "2",
		"trace_id", "t"}, kv...)...)
}

// A lost connection is made again: requests safe to send twice are sent
// again and answered there; a submit without a key and a cancel report
// that their outcome is unknown, at once.
func TestClient_ReconnectSendsAgain(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{Reconnect: quick})
	ch := make(chan outcome, 4)
	ctx := context.Background()
	go func() {
		ts, err := c.Query(ctx, 7)
		if err == nil && ts.State != "running" {
			err = errors.New("bad state " + ts.State)
		}
		ch <- outcome{"query", err}
	}()
	go func() {
		sub, err := c.Submit(ctx, client.SubmitRequest{Type: "x", Key: "k1"})
		if err == nil && sub.ID != 42 {
			err = errors.New("wrong id")
		}
		ch <- outcome{"submit-key", err}
	}()
	go func() {
		_, err := c.Submit(ctx, client.SubmitRequest{Type: "x"})
		ch <- outcome{"submit-nokey", err}
	}()
	go func() { ch <- outcome{"cancel", c.Cancel(ctx, 3)} }()
	for range 4 {
		sc.expect("")
	}
	sc.Net.Close()

	lost := collect(t, ch, 2)
	require.Equal(t, "cancel", lost[0].name)
	require.Equal(t, "submit-nokey", lost[1].name)
	for _, o := range lost {
		assert.ErrorIs(t, o.err, client.ErrOutcomeUnknown, o.name)
		assert.ErrorIs(t, o.err, client.ErrConnectionLost, o.name)
		assert.ErrorIs(t, o.err, client.ErrNoReply, o.name)
	}

	sc2 := f.accept(t)
	sc2.hello()
	for range 2 {
		m := sc2.expect("")
		switch m.Type() {
		case "query":
			assert.Equal(t, "7", m.Value("task_id"))
			taskState(sc2, m, "running")
		case "submit":
			assert.Equal(t, "k1", m.Value("key"), "the keyed submit, sent again")
			sc2.send("submitted", "req", m.Value("req"), "task_id", "42", "duplicate", "true")
		default:
			t.Fatalf("unexpected %s", m)
		}
	}
	for _, o := range collect(t, ch, 2) {
		assert.NoError(t, o.err, o.name)
	}
}

// A call made while the client reconnects waits for the connection, up to
// its context's end; then nothing was sent.
func TestClient_CallsWaitForReconnect(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{Reconnect: quick})
	sc.Net.Close()
	sc2 := f.accept(t) // the reconnect, held before its hello_ok

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Stats(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, client.ErrConnectionLost)
	assert.NotErrorIs(t, err, client.ErrNoReply, "nothing was sent")

	errc := make(chan error, 1)
	go func() {
		_, err := c.Stats(context.Background())
		errc <- err
	}()
	sc2.hello()
	m := sc2.expect("stats")
	sc2.send("stats", "req", m.Value("req"), "uptime_ms", "1")
	select {
	case err := <-errc:
		assert.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("the call did not go through after the reconnect")
	}
}

// A wait whose connection is lost goes on by the task's id: it queries
// the task until it has ended, and returns its end.
func TestWatch_ResumesByIDAfterReconnect(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{Reconnect: quick})
	type waited struct {
		d   client.Done
		err error
	}
	watching, res := make(chan struct{}), make(chan waited, 1)
	go func() {
		w, err := c.SubmitWatch(context.Background(), client.SubmitRequest{Type: "x"})
		close(watching)
		if err != nil {
			res <- waited{err: err}
			return
		}
		d, err := w.Wait(context.Background())
		res <- waited{d, err}
	}()
	m := sc.expect("submit")
	sc.send("submitted", "req", m.Value("req"), "task_id", "9")
	<-watching
	sc.Net.Close()

	sc2 := f.accept(t)
	sc2.hello()
	q := sc2.expect("query")
	assert.Equal(t, "9", q.Value("task_id"))
	taskState(sc2, q, "running")
	q = sc2.expect("query")
	taskState(sc2, q, "succeeded", "out.answer", "42")
	select {
	case r := <-res:
		require.NoError(t, r.err)
		assert.Equal(t, client.Done{ID: 9, State: "succeeded", Out: map[string]string{"answer": "42"}}, r.d)
	case <-time.After(waitFor):
		t.Fatal("the wait did not end")
	}
}

// GiveUpAfter ends the client when no connection comes back in time:
// then calls fail at once.
func TestClient_ReconnectGivesUp(t *testing.T) {
	f := mustStartFakeServer(t)
	rc := quick
	rc.GiveUpAfter = 200 * time.Millisecond
	c, sc := mustDial(t, f, client.Options{Reconnect: rc})
	sc.Net.Close() // and no hello_ok ever again: the next handshake waits until the give-up time
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	_, err := c.Stats(ctx)
	assert.ErrorIs(t, err, client.ErrConnectionLost)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "ended by giving up, not by the call's deadline")
	assert.Contains(t, err.Error(), "gave up reconnecting")
}

func TestDial_ReconnectOptions(t *testing.T) {
	for _, rc := range []client.Reconnect{{MinDelay: -1}, {MaxDelay: -1}, {GiveUpAfter: -1},
		{MinDelay: time.Second, MaxDelay: time.Millisecond}} {
		_, err := client.Dial(context.Background(), "127.0.0.1:1", client.Options{Reconnect: rc})
		assert.ErrorContains(t, err, "Reconnect", "%+v", rc)
	}
}

// A keyed wait is taken up by its key: the submit, sent again with
// wait=true, names the same task and brings its done, with no polling.
func TestWatch_ResumesByKeyAfterReconnect(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{Reconnect: quick})
	res := make(chan outcome, 1)
	watching := make(chan struct{})
	var d client.Done
	go func() {
		w, err := c.SubmitWatch(context.Background(), client.SubmitRequest{Type: "x", Key: "k9"})
		close(watching)
		if err == nil {
			d, err = w.Wait(context.Background())
		}
		res <- outcome{"wait", err}
	}()
	m := sc.expect("submit")
	sc.send("submitted", "req", m.Value("req"), "task_id", "9")
	<-watching
	sc.Net.Close()

	sc2 := f.accept(t)
	sc2.hello()
	q := sc2.expect("query")
	taskState(sc2, q, "running")
	m = sc2.expect("submit")
	assert.Equal(t, "k9", m.Value("key"))
	assert.Equal(t, "true", m.Value("wait"))
	sc2.send("submitted", "req", m.Value("req"), "task_id", "9", "duplicate", "true")
	sc2.send("done", "req", m.Value("req"), "task_id", "9", "state", "failed", "error", "boom")
	o := collect(t, res, 1)[0]
	require.NoError(t, o.err)
	assert.Equal(t, client.Done{ID: 9, State: "failed", Error: "boom", Out: map[string]string{}}, d)
}
