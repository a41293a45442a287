package executor_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/internal/fakemain"
)

// startFollower starts a scripted cluster follower, which refuses
// register with not_leader naming leader ("" names none) and closes.
func startFollower(t *testing.T, leader string) *fakemain.Server {
	t.Helper()
	return fakemain.Start(t, fakemain.WithFollower(fakemain.Follower{Leader: leader}))
}

// A follower refuses register and names the leader, which is in the
// executor's list: it registers there at once, before any backoff.
func TestFollow_RegisterHintInList(t *testing.T) {
	leader := mustStartFakeMain(t)
	f := startFollower(t, leader.addr())
	mustRun(t, nil, executor.Config{Addr: f.Addr(), Addrs: []string{leader.addr()},
		Handlers:   map[string]executor.Handler{"echo": echoHandler()},
		BackoffMin: time.Hour, BackoffMax: time.Hour})
	leader.accept(t).registerQuiet()
	assert.Equal(t, int64(1), f.Refused())
}

// A follower names a leader outside the executor's list: a rogue or stale
// server trying to take its tasks. The executor never dials it; it logs
// the hint and tries the next address of its own list.
func TestFollow_RegisterHintOutsideListIgnored(t *testing.T) {
	rogue := mustStartFakeMain(t)
	leader := mustStartFakeMain(t)
	f := startFollower(t, rogue.addr())
	s := mustRun(t, nil, executor.Config{Addr: f.Addr(), Addrs: []string{leader.addr()},
		Handlers: map[string]executor.Handler{"echo": echoHandler()}})
	leader.accept(t).registerQuiet()
	rogue.noConn(t, 200*time.Millisecond)
	r := s.logs.eventually(t, "ignoring a leader hint outside the configured addresses")
	assert.Equal(t, rogue.addr(), r["leader"])
}

// A follower with no leader to name, and an address nobody listens on,
// send the executor on to the next address.
func TestFollow_RegisterNoHintTriesNext(t *testing.T) {
	leader := mustStartFakeMain(t)
	f := startFollower(t, "")
	dead := fakemain.Start(t)
	deadAddr := dead.Addr()
	mustRun(t, nil, executor.Config{Addr: f.Addr(), Addrs: []string{deadAddr, leader.addr()},
		Handlers: map[string]executor.Handler{"echo": echoHandler()}})
	dead.Accept(t).Net.Close() // a member that closes at once
	leader.accept(t).registerQuiet()
	assert.GreaterOrEqual(t, f.Refused(), int64(1))
}

// The leader is lost while a task runs. The executor finds the new leader
// through a follower's hint and registers there, listing the running task
// with `started` so that it is not run twice.
func TestFollow_ReregistersWithRunningTask(t *testing.T) {
	old := mustStartFakeMain(t)
	leader := mustStartFakeMain(t)
	f := startFollower(t, leader.addr())
	release := make(chan struct{})
	causes := make(chan error, 1)
	mustRun(t, nil, executor.Config{Addr: old.addr(), Addrs: []string{f.Addr(), leader.addr()},
		Handlers: map[string]executor.Handler{"block": blockHandler(release, causes)}})
	c := old.accept(t)
	c.registerQuiet()
	c.sendTask(5, 3, "block")
	c.expectStarted(5, 3)
	c.Net.Close() // the old leader dies

	c2 := leader.accept(t)
	c2.registerQuiet()
	c2.expectStarted(5, 3)
	close(release)
	require.NoError(t, <-causes)
	c2.expectResult(5, 3)
	assert.Equal(t, int64(1), f.Refused(), "the follower was asked once, and named the leader")
}
