package maincontrol_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// Spec section 1: frames split across reads, many frames per read, frames
// larger than gnet's read buffer.

func mustFrame(t testing.TB, typ string, kv ...string) []byte {
	t.Helper()
	m := wire.NewMessage(wire.Kind(typ))
	for i := 0; i+1 < len(kv); i += 2 {
		m.Set(kv[i], kv[i+1])
	}
	b, err := wire.AppendFrame(nil, m)
	require.NoError(t, err)
	return b
}

func TestFraming_Split(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})

	t.Run("byte by byte", func(t *testing.T) {
		p := dialRaw(t, addr)
		var all []byte
		all = append(all, mustFrame(t, "hello", "req", "h")...)
		all = append(all, mustFrame(t, "submit", "req", "s", "task_type", "t", "arg.x", "a=b\nc")...)
		all = append(all, mustFrame(t, "stats", "req", "st")...)
		for i := range all {
			p.writeRaw(all[i : i+1])
			if i%8 == 0 {
				time.Sleep(200 * time.Microsecond) // let some bytes arrive alone
			}
		}
		assert.Equal(t, "h", p.expect("hello_ok").Value("req"))
		assert.Equal(t, "s", p.expect("submitted").Value("req"))
		assert.Equal(t, "st", p.expect("stats").Value("req"))
	})
	t.Run("every split point of one frame", func(t *testing.T) {
		p := clientPeer(t, addr)
		f := mustFrame(t, "stats", "req", "split")
		for i := 1; i < len(f); i++ {
			p.writeRaw(f[:i])
			time.Sleep(time.Millisecond)
			p.writeRaw(f[i:])
			assert.Equal(t, "split", p.expect("stats").Value("req"), "split at %d", i)
		}
	})
	t.Run("many frames in one write, the last one partial", func(t *testing.T) {
		p := clientPeer(t, addr)
		var buf []byte
		for i := 0; i < 500; i++ {
			buf = append(buf, mustFrame(t, "stats", "req", strconv.Itoa(i))...)
		}
		last := mustFrame(t, "stats", "req", "last")
		buf = append(buf, last[:7]...)
		p.writeRaw(buf)
		for i := 0; i < 500; i++ {
			assert.Equal(t, strconv.Itoa(i), p.expect("stats").Value("req"))
		}
		time.Sleep(5 * time.Millisecond)
		p.writeRaw(last[7:])
		assert.Equal(t, "last", p.expect("stats").Value("req"))
	})
}

func TestFraming_LargeFrames(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "big", 1)
	big := strings.Repeat("0123456789abcdef", 200<<10/16) // 200 KiB
	esc := strings.Repeat("=\n\\", 100<<10/3)             // 100 KiB, escaped 200 KiB

	cl.send("submit", "req", "big", "task_type", "big", "arg.big", big, "arg.esc", esc, "wait", "true")
	id := assertUint(t, cl.expect("submitted"), "task_id")
	task := ex.expectTask(id)
	assert.Equal(t, big, task.Value("arg.big"))
	assert.Equal(t, esc, task.Value("arg.esc"))
	ex.start(task)
	ack := ex.finish(task, "status", "succeeded", "out.big", big, "state.set.big", big)
	assert.Equal(t, "true", ack.Value("accepted"))
	d := cl.expect("done")
	assert.Equal(t, big, d.Value("out.big"))
	assert.Equal(t, big, cl.query(id).Value("out.big"))
	m := cl.request("state_get", "req", "g", "keys", "big")
	assert.Equal(t, big, m.Value("state.big"))

	t.Run("written in small pieces", func(t *testing.T) {
		f := mustFrame(t, "submit", "req", "pieces", "task_type", "none", "arg.big", big)
		for off := 0; off < len(f); off += 1000 {
			cl.writeRaw(f[off:min(off+1000, len(f))])
		}
		assert.Equal(t, "pieces", cl.expect("submitted").Value("req"))
	})
}

// The main control never sends a frame larger than its maximum (spec
// section 1).
func TestFraming_NeverSendsOverMaxFrame(t *testing.T) {
	t.Parallel()
	const maxFrame = 4096
	addr := startServer(t, maincontrol.Config{Core: core.Config{MaxFrame: maxFrame}})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)
	cl.r.SetMaxFrame(maxFrame) // any larger frame from the server fails the read
	ex.r.SetMaxFrame(maxFrame)

	t.Run("submit whose task frame could exceed it", func(t *testing.T) {
		cl.send("submit", "req", "big", "task_type", "t", "arg.a", strings.Repeat("x", 3900))
		cl.expectError(wire.CodeBadRequest, "big")
		cl.send("submit", "req", "big2", "task_type", "t", "arg.a", strings.Repeat("=", 2000))
		cl.expectError(wire.CodeBadRequest, "big2")
		cl.alive("a")
		assert.Equal(t, "0", cl.request("stats", "req", "s").Value("tasks.pending"))
	})
	t.Run("result whose out.* would be too large", func(t *testing.T) {
		id := cl.submit("s", "task_type", "t", "wait", "true")
		task := ex.expectTask(id)
		ex.start(task)
		ack := ex.finish(task, "status", "succeeded", "out.small", "1", "out.big", strings.Repeat("y", 3800))
		assert.Equal(t, "false", ack.Value("accepted"))
		assert.Equal(t, "illegal_value", ack.Value("reason"))
		d := cl.expect("done")
		assert.Equal(t, "failed", d.Value("state"))
		assert.Equal(t, "illegal_value out.big", d.Value("error"))
		assert.False(t, d.Has("out.small"))
	})
	t.Run("failed result whose error would be too large", func(t *testing.T) {
		id := cl.submit("s", "task_type", "t")
		task := ex.expectTask(id)
		ex.start(task)
		ack := ex.finish(task, "status", "failed", "error", strings.Repeat("e", 3900))
		assert.Equal(t, "illegal_value", ack.Value("reason"))
		assert.Equal(t, "failed", cl.stateOf(id))
	})
	t.Run("state_get whose reply would be too large", func(t *testing.T) {
		for _, k := range []string{"a", "b"} {
			cl.submit("s", "task_type", "t")
			task := ex.expectTask(0)
			ex.start(task)
			ack := ex.finish(task, "status", "succeeded", "state.set."+k, strings.Repeat(k, 2500))
			require.Equal(t, "true", ack.Value("accepted"))
		}
		cl.send("state_get", "req", "all")
		cl.expectError(wire.CodeBadRequest, "all")
		ex.send("state_get", "req", "all")
		ex.expectError(wire.CodeBadRequest, "all")
		m := cl.request("state_get", "req", "one", "keys", "b")
		assert.Len(t, m.Value("state.b"), 2500)
	})
	t.Run("list holds fewer ids, with next", func(t *testing.T) {
		want := map[string]bool{}
		for i := 0; i < 2500; i++ {
			want[u(cl.submit("s", "task_type", "none"))] = true
		}
		after, short := "0", false
		got := map[string]bool{}
		for {
			m := cl.request("list", "req", strings.Repeat("r", 64), "state", "pending", "limit", "1000", "after", after)
			require.Equal(t, "tasks", m.Type(), "got %s", m)
			ids := strings.Split(m.Value("ids"), ",")
			assert.Equal(t, strconv.Itoa(len(ids)), m.Value("count"))
			for _, id := range ids {
				got[id] = true
			}
			next, ok := m.Get("next")
			if !ok {
				break
			}
			short = short || len(ids) < 1000
			assert.Equal(t, ids[len(ids)-1], next)
			after = next
		}
		assert.Equal(t, want, got)
		assert.True(t, short, "a 4 KiB frame holds fewer than 1000 ids of 4 digits")
	})
}
