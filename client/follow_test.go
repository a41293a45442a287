package client_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/internal/fakemain"
	"github.com/apollo11/apollo11/internal/syncbuf"
)

// startFollower starts a scripted cluster follower (see fakemain.Follower).
func startFollower(t *testing.T, f fakemain.Follower) *fakemain.Server {
	t.Helper()
	return fakemain.Start(t, fakemain.WithFollower(f))
}

// deadAddr is a loopback address nobody listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// dialList starts Dial over addrs in the background, logging into logs.
func dialList(addrs []string, opts client.Options, logs *syncbuf.Buffer) <-chan dialResult {
	if logs != nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	} else if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Addrs = addrs[1:]
	if opts.Reconnect == (client.Reconnect{}) {
		opts.Reconnect = quick
	}
	ch := make(chan dialResult, 1)
	go func() {
		c, err := client.Dial(context.Background(), addrs[0], opts)
		ch <- dialResult{c, err}
	}()
	return ch
}

type dialResult struct {
	c   *client.Client
	err error
}

func dialed(t *testing.T, ch <-chan dialResult) (*client.Client, error) {
	t.Helper()
	select {
	case d := <-ch:
		if d.c != nil {
			t.Cleanup(func() { d.c.Close() })
		}
		return d.c, d.err
	case <-time.After(waitFor):
		t.Fatal("Dial did not return")
		return nil, nil
	}
}

// A follower's hello_ok names the leader, which is in the list: the client
// goes there at once and sends its requests to it.
func TestFollow_HelloHintInList(t *testing.T) {
	leader := mustStartFakeServer(t)
	f := startFollower(t, fakemain.Follower{HelloLeader: leader.addr(), Leader: leader.addr()})
	ch := dialList([]string{f.Addr(), leader.addr()}, client.Options{}, nil)
	sc := leader.accept(t)
	sc.hello()
	c, err := dialed(t, ch)
	require.NoError(t, err)
	go func() {
		m := sc.expect("query")
		taskState(sc, m, "running")
	}()
	ts, err := c.Query(context.Background(), 7)
	require.NoError(t, err)
	assert.Equal(t, "running", ts.State)
	assert.Equal(t, int64(0), f.Refused(), "nothing was sent to the follower")
}

// A follower names a leader outside the client's list: a rogue or stale
// server steering it elsewhere. The client never dials it; it logs the
// hint and goes on to the next address of its own list.
func TestFollow_HelloHintOutsideListIgnored(t *testing.T) {
	rogue := mustStartFakeServer(t)
	leader := mustStartFakeServer(t)
	f := startFollower(t, fakemain.Follower{HelloLeader: rogue.addr(), Leader: rogue.addr()})
	var logs syncbuf.Buffer
	ch := dialList([]string{f.Addr(), leader.addr()}, client.Options{}, &logs)
	sc := leader.accept(t)
	sc.hello()
	_, err := dialed(t, ch)
	require.NoError(t, err)
	rogue.NoConn(t, 200*time.Millisecond)
	assert.Contains(t, logs.String(), "ignoring a leader hint outside the configured addresses")
	assert.Contains(t, logs.String(), "leader="+rogue.addr())
}

// A request refused with not_leader changed nothing: it is sent again to
// the leader the refusal names, even a submit without a key, which a lost
// connection would leave unknown. A one-shot request left unanswered on
// the refusing connection, which then closes, is unknown as after any
// loss.
func TestFollow_NotLeaderSendsAgainToLeader(t *testing.T) {
	old := mustStartFakeServer(t)
	leader := mustStartFakeServer(t)
	c, sc := mustDialList(t, old, []string{leader.addr()})
	ch := make(chan outcome, 3)
	ctx := context.Background()
	go func() {
		sub, err := c.Submit(ctx, client.SubmitRequest{Type: "x"})
		if err == nil && sub.ID != 9 {
			err = errors.New("wrong id")
		}
		ch <- outcome{"a-submit", err}
	}()
	sub := sc.expect("submit")
	go func() {
		_, err := c.Query(ctx, 7)
		ch <- outcome{"b-query", err}
	}()
	q := sc.expect("query")
	go func() { ch <- outcome{"c-cancel", c.Cancel(ctx, 3)} }()
	sc.expect("cancel")
	sc.send("error", "req", sub.Value("req"), "code", "not_leader", "leader", leader.addr())
	sc.Net.Close()

	lost := collect(t, ch, 1)
	assert.Equal(t, "c-cancel", lost[0].name)
	assert.ErrorIs(t, lost[0].err, client.ErrOutcomeUnknown, "its reply never came")

	sc2 := leader.accept(t)
	sc2.hello()
	for range 2 {
		m := sc2.expect("")
		switch m.Type() {
		case "submit":
			assert.Equal(t, "x", m.Value("task_type"))
			sc2.send("submitted", "req", m.Value("req"), "task_id", "9")
		case "query":
			assert.Equal(t, q.Value("task_id"), m.Value("task_id"))
			taskState(sc2, m, "running")
		default:
			t.Fatalf("unexpected %s", m)
		}
	}
	for _, o := range collect(t, ch, 2) {
		assert.NoError(t, o.err, o.name)
	}
	old.NoConn(t, 100*time.Millisecond)
}

// A not_leader naming a leader outside the list is not followed: the
// request goes to the next address of the list instead.
func TestFollow_NotLeaderHintOutsideListIgnored(t *testing.T) {
	rogue := mustStartFakeServer(t)
	old := mustStartFakeServer(t)
	leader := mustStartFakeServer(t)
	var logs syncbuf.Buffer
	c, sc := mustDialList(t, old, []string{leader.addr()}, &logs)
	ch := make(chan outcome, 1)
	go func() {
		_, err := c.Submit(context.Background(), client.SubmitRequest{Type: "x"})
		ch <- outcome{"submit", err}
	}()
	m := sc.expect("submit")
	sc.send("error", "req", m.Value("req"), "code", "not_leader", "leader", rogue.addr())
	sc2 := leader.accept(t)
	sc2.hello()
	m = sc2.expect("submit")
	sc2.send("submitted", "req", m.Value("req"), "task_id", "9")
	assert.NoError(t, collect(t, ch, 1)[0].err)
	rogue.NoConn(t, 100*time.Millisecond)
	assert.Contains(t, logs.String(), "ignoring a leader hint outside the configured addresses")
}

// A not_leader with no hint, and a dead address, move the client on to the
// next address of its list.
func TestFollow_NoHintTriesNextAddress(t *testing.T) {
	old := mustStartFakeServer(t)
	leader := mustStartFakeServer(t)
	c, sc := mustDialList(t, old, []string{deadAddr(t), leader.addr()})
	ch := make(chan outcome, 1)
	go func() {
		_, err := c.Stats(context.Background())
		ch <- outcome{"stats", err}
	}()
	m := sc.expect("stats")
	sc.send("error", "req", m.Value("req"), "code", "not_leader")
	sc2 := leader.accept(t)
	sc2.hello()
	m = sc2.expect("stats")
	sc2.send("stats", "req", m.Value("req"))
	assert.NoError(t, collect(t, ch, 1)[0].err)
}

// Followers without a leader: Dial goes on looking until the dial timeout,
// then fails with ErrNoLeader; with AcceptFollower it keeps one.
func TestFollow_NoLeaderElected(t *testing.T) {
	a := startFollower(t, fakemain.Follower{})
	b := startFollower(t, fakemain.Follower{Role: "candidate"})
	start := time.Now()
	// A backoff close to the timeout: Dial must still wait out the rest.
	slow := client.Reconnect{MinDelay: 250 * time.Millisecond, MaxDelay: 250 * time.Millisecond}
	_, err := dialed(t, dialList([]string{a.Addr(), b.Addr()}, client.Options{DialTimeout: 300 * time.Millisecond, Reconnect: slow}, nil))
	require.ErrorIs(t, err, client.ErrNoLeader)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "it looked until the deadline, not short of it")
	assert.Greater(t, a.Accepted(), int64(1), "it tried again while an election may be under way")
	// The error says no member leads and why, each member's own role,
	// and no empty leader.
	assert.Contains(t, err.Error(), "no member leads (a majority of the voters must be up to elect a leader; none was elected in 300ms)")
	assert.Contains(t, err.Error(), b.Addr()+" is a candidate")
	assert.Contains(t, err.Error(), a.Addr()+" is a follower")
	assert.NotContains(t, err.Error(), `leader ""`)
	assert.NotContains(t, err.Error(), "dial timeout")

	c, err := dialed(t, dialList([]string{a.Addr(), b.Addr()}, client.Options{AcceptFollower: true}, nil))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = c.Stats(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.GreaterOrEqual(t, a.Refused()+b.Refused(), int64(2), "each refusal sent it on to the next member")
}

// Two stale followers name each other as leader; the real leader is the
// third address. The client does not loop between them.
func TestFollow_StaleFollowersNamingEachOther(t *testing.T) {
	leader := mustStartFakeServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	bAddr := ln.Addr().String()
	ln.Close() // b's address, known before b listens on it
	a := startFollower(t, fakemain.Follower{HelloLeader: bAddr})
	b := fakemain.Start(t, fakemain.WithFollower(fakemain.Follower{HelloLeader: a.Addr()}), fakemain.WithListen(bAddr))
	ch := dialList([]string{a.Addr(), b.Addr(), leader.addr()}, client.Options{}, nil)
	sc := leader.accept(t)
	sc.hello()
	_, err = dialed(t, ch)
	require.NoError(t, err)
	assert.Equal(t, int64(1), a.Accepted())
	assert.Equal(t, int64(1), b.Accepted())
}

// mustDialList dials first, with more addresses, and completes the
// handshake on first.
func mustDialList(t *testing.T, first *fakeServer, more []string, logs ...*syncbuf.Buffer) (*client.Client, *srvConn) {
	t.Helper()
	var l *syncbuf.Buffer
	if len(logs) > 0 {
		l = logs[0]
	}
	ch := dialList(append([]string{first.addr()}, more...), client.Options{}, l)
	sc := first.accept(t)
	sc.hello()
	c, err := dialed(t, ch)
	require.NoError(t, err)
	return c, sc
}

// The only follower given names a leader outside the list. An election
// is over, so Dial fails at once rather than wait out DialTimeout. Its
// error names the leader, to be added. The leader is still not dialled.
func TestFollow_LeaderOutsideListFailsFast(t *testing.T) {
	rogue := mustStartFakeServer(t)
	f := startFollower(t, fakemain.Follower{HelloLeader: rogue.addr(), Leader: rogue.addr()})
	start := time.Now()
	_, err := dialed(t, dialList([]string{f.Addr()}, client.Options{DialTimeout: time.Minute}, nil))
	took := time.Since(start)
	require.ErrorIs(t, err, client.ErrNoLeader)
	out, ok := errors.AsType[*client.LeaderOutsideError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, rogue.addr(), out.Leader)
	assert.Equal(t, f.Addr(), out.Follower)
	assert.Contains(t, err.Error(), "add it")
	assert.Less(t, took, 30*time.Second, "it did not wait for an election")
	assert.Equal(t, int64(1), f.Accepted(), "one pass, no retry")
	rogue.NoConn(t, 100*time.Millisecond)
}

// The follower names no leader yet: an election may be under way, so
// Dial keeps trying until one is named. A later hint inside the list is
// followed.
func TestFollow_LeaderNotYetKnownStillWaits(t *testing.T) {
	leader := mustStartFakeServer(t)
	a := startFollower(t, fakemain.Follower{})
	ch := dialList([]string{a.Addr()}, client.Options{DialTimeout: 300 * time.Millisecond}, nil)
	_, err := dialed(t, ch)
	require.ErrorIs(t, err, client.ErrNoLeader)
	_, outside := errors.AsType[*client.LeaderOutsideError](err)
	assert.False(t, outside, "no leader was named: %v", err)
	assert.Greater(t, a.Accepted(), int64(1), "it tried again")

	b := startFollower(t, fakemain.Follower{HelloLeader: leader.addr()})
	ch = dialList([]string{b.Addr(), a.Addr(), leader.addr()}, client.Options{}, nil)
	leader.accept(t).hello()
	_, err = dialed(t, ch)
	require.NoError(t, err)
}

// A follower names a leader outside the list, but another address of
// the list answers as leader (the same member under another name): Dial
// keeps that one.
func TestFollow_LeaderOutsideHintButListHasALeader(t *testing.T) {
	rogue := mustStartFakeServer(t)
	leader := mustStartFakeServer(t)
	f := startFollower(t, fakemain.Follower{HelloLeader: rogue.addr()})
	ch := dialList([]string{f.Addr(), leader.addr()}, client.Options{}, nil)
	leader.accept(t).hello()
	_, err := dialed(t, ch)
	require.NoError(t, err)
	rogue.NoConn(t, 100*time.Millisecond)
}
