package maincontrol_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// The conformance suite: every message of wire-v1 sections 3 to 5, over
// real loopback sockets, checked key by key.

var lowerHex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestConformance_Welcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		core     core.Config
		server   string
		auth     string
		maxFrame string
	}{
		{"defaults", core.Config{}, "apollo11/dev", "none", "1048576"},
		{"version and max frame", core.Config{Version: "1.2.3", MaxFrame: 4096}, "apollo11/1.2.3", "none", "4096"},
		{"token", core.Config{Token: []byte("s3cret")}, "apollo11/dev", "hmac-sha256", "1048576"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := startServer(t, maincontrol.Config{Core: tc.core})
			seen := map[string]bool{}
			for i := 0; i < 10; i++ {
				w := dialRaw(t, addr).hello
				assertKeys(t, w, "type", "proto", "server", "nonce", "auth", "max_frame", "features")
				assert.Equal(t, "1", w.Value("proto"))
				assert.Equal(t, tc.server, w.Value("server"))
				assert.Equal(t, tc.auth, w.Value("auth"))
				assert.Equal(t, tc.maxFrame, w.Value("max_frame"))
				nonce := w.Value("nonce")
				assert.Regexp(t, lowerHex32, nonce)
				assert.False(t, seen[nonce], "nonce %s repeated", nonce)
				seen[nonce] = true
			}
		})
	}
}

func TestConformance_Queueing(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)

	t.Run("a delayed task queues by the time its delay ends", func(t *testing.T) {
		delayed := cl.submit("a", "task_type", "q1", "delay_ms", "100")
		prompt := cl.submit("b", "task_type", "q1")
		time.Sleep(300 * time.Millisecond)
		ex := executorPeer(t, addr, "q1", "q1", 1)
		task := ex.expectTask(prompt)
		ex.start(task)
		ex.finish(task, "status", "succeeded")
		ex.expectTask(delayed)
	})
	t.Run("a dependency chain is released, then cancelled down the chain", func(t *testing.T) {
		a := cl.submit("a", "task_type", "q2")
		b := cl.submit("b", "task_type", "q2", "depends_on", u(a))
		c := cl.submit("c", "task_type", "q2", "depends_on", u(b)+","+u(a))
		d := cl.submit("d", "task_type", "none", "depends_on", u(c))
		ex := executorPeer(t, addr, "q2", "q2", 4)
		task := ex.expectTask(a)
		assert.Equal(t, "waiting", cl.stateOf(b))
		ex.start(task)
		ex.finish(task, "status", "succeeded")
		task = ex.expectTask(b)
		assert.Equal(t, "waiting", cl.stateOf(c))
		ex.start(task)
		ex.finish(task, "status", "failed", "retryable", "false")
		st := cl.query(c)
		assert.Equal(t, "cancelled", st.Value("state"))
		assert.Equal(t, "dependency "+u(b)+" failed", st.Value("error"))
		st = cl.query(d)
		assert.Equal(t, "cancelled", st.Value("state"))
		assert.Equal(t, "dependency "+u(c)+" cancelled", st.Value("error"))
	})
}

func TestConformance_Retention(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{Core: core.Config{RetentionMax: 2}})
	cl := clientPeer(t, addr)
	var ids []uint64
	for i := 0; i < 4; i++ {
		ids = append(ids, cl.submit("s", "task_type", "none", "key", "r"+strconv.Itoa(i)))
	}
	for _, i := range []int{2, 0, 1, 3} { // end order: the newest ended are 1 and 3
		cl.request("cancel", "req", "c", "task_id", u(ids[i]))
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		m := cl.request("list", "req", "l", "state", "cancelled")
		if m.Value("ids") == u(ids[1])+","+u(ids[3]) {
			break
		}
		require.True(t, time.Now().Before(deadline), "not dropped within 1 s: %s", m)
		time.Sleep(20 * time.Millisecond)
	}
	for _, i := range []int{0, 2} {
		cl.send("query", "req", "q", "task_id", u(ids[i]))
		cl.expectError(wire.CodeUnknownTask, "q")
	}
	m := cl.request("submit", "req", "again", "task_type", "none", "key", "r0")
	assert.False(t, m.Has("duplicate"), "a dropped task's key may be used again")
	assert.Equal(t, u(ids[3]+1), m.Value("task_id"))
	m = cl.request("submit", "req", "dup", "task_type", "none", "key", "r1")
	assert.Equal(t, "true", m.Value("duplicate"), "a kept task's key is still known")
}

// Spec section 4, task: the executor with the fewest dispatched and running
// tasks gets the next one; ties go to the one that registered first.
func TestConformance_DispatchChoice(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	e1 := executorPeer(t, addr, "e1", "t", 4)
	e2 := executorPeer(t, addr, "e2", "t,u", 4)
	e3 := executorPeer(t, addr, "e3", "u", 4)
	for i, want := range []*rawPeer{e1, e2, e1, e2, e1} {
		id := cl.submit("s"+strconv.Itoa(i), "task_type", "t")
		want.expectTask(id)
	}
	// e2 has 2 tasks, e3 none: u goes to e3, then e3 again (1 < 2), then
	// the tie at 2 goes to e2, which registered first.
	for i, want := range []*rawPeer{e3, e3, e2} {
		id := cl.submit("u"+strconv.Itoa(i), "task_type", "u")
		want.expectTask(id)
	}
	e1.aliveExec(1)
	e3.aliveExec(1)
}

func TestConformance_DependencyNaming(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)
	pending := cl.submit("p", "task_type", "none")
	failed := cl.submit("f", "task_type", "t", "max_attempts", "1")
	task := ex.expectTask(failed)
	ex.start(task)
	ex.finish(task, "status", "failed")
	cancelled := cl.submit("c", "task_type", "none")
	cl.request("cancel", "req", "c", "task_id", u(cancelled))
	tests := []struct {
		deps, want string
	}{
		{u(pending) + "," + u(cancelled) + "," + u(failed), "dependency " + u(cancelled) + " cancelled"},
		{u(failed) + "," + u(cancelled), "dependency " + u(failed) + " failed"},
		{u(pending) + "," + u(pending) + "," + u(failed), "dependency " + u(failed) + " failed"},
	}
	for _, tc := range tests {
		m := cl.request("submit", "req", "d", "task_type", "none", "depends_on", tc.deps, "wait", "true")
		require.Equal(t, "submitted", m.Type(), "got %s", m)
		d := cl.expect("done")
		assert.Equal(t, "cancelled", d.Value("state"))
		assert.Equal(t, tc.want, d.Value("error"))
	}
}
