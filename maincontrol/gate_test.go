package maincontrol

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// reachesCore walks the types t's values can reach through this package's
// types and returns the first path to a *core.Core, a *Server or a func
// field (a func could hide either). Foreign types are not entered: the
// log and gnet call back only from their own goroutines. Nor is Config:
// its hooks are the embedder's, and only the server calls them.
func reachesCore(t reflect.Type) string {
	pkg := reflect.TypeFor[gate]().PkgPath()
	bad := map[reflect.Type]bool{reflect.TypeFor[core.Core](): true, reflect.TypeFor[Server](): true}
	seen := map[reflect.Type]bool{reflect.TypeFor[Config](): true}
	var walk func(t reflect.Type, path string) string
	walk = func(t reflect.Type, path string) string {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			t = t.Elem()
		}
		if bad[t] {
			return path + " (" + t.String() + ")"
		}
		if seen[t] {
			return ""
		}
		seen[t] = true
		switch t.Kind() {
		case reflect.Func:
			return path + " (a func)"
		case reflect.Map:
			if p := walk(t.Key(), path+"[key]"); p != "" {
				return p
			}
			return walk(t.Elem(), path+"[]")
		case reflect.Struct:
			if t.PkgPath() != pkg && t.Name() != "" { // anonymous ones are entered
				return ""
			}
			for i := range t.NumField() {
				f := t.Field(i)
				if p := walk(f.Type, path+"."+f.Name); p != "" {
					return p
				}
			}
		}
		return ""
	}
	return walk(t, t.String())
}

// The core's Effects must not call back into the core (core.Effects). The
// gate holds nothing that leads to it: the server pushes the log's health
// and the core pushes frame logging.
func TestGate_ReachesNoCore(t *testing.T) {
	s, err := newServer(Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	var fx core.Effects = s.gate
	assert.Empty(t, reachesCore(reflect.TypeOf(fx)))
	// The walk does find a way back where there is one, as through the
	// Server, the core's Effects before the gate.
	assert.Equal(t, "*maincontrol.selfCalling.held.cn[].gc.x.s (maincontrol.Server)", reachesCore(reflect.TypeFor[*selfCalling]()))
	assert.Equal(t, "maincontrol.selfCalling2.debug (a func)", reachesCore(reflect.TypeFor[selfCalling2]()))
}

type selfCalling struct {
	held []heldFrame2
}

type heldFrame2 struct{ cn map[core.PeerID]*conn2 }

type conn2 struct{ gc struct{ x *wrapped } }

type wrapped struct{ s *Server }

type selfCalling2 struct {
	wakes *wakeList
	debug func() bool
}

// testGate is a gate with one connection, as the server would set it up.
func testGate() (*gate, *conn) {
	var w wakeList
	cfg, _ := Config{}.withDefaults()
	cfg.Core.Clock = &core.ManualClock{T: time.Unix(1_700_000_000, 0)}
	g := newGate(cfg.Core.Clock, slog.New(slog.DiscardHandler), newFlow(&cfg, nil, &w), &w)
	cn := &conn{id: 1}
	g.conns[cn.id] = cn
	return g, cn
}

// A confirmation waits for the disk even while the log cannot be written;
// other replies go out then, and a handshake frame waits only for the
// frames held before it.
func TestGate_WaitRules(t *testing.T) {
	g, cn := testGate()
	g.lastLSN, g.durableLSN = 5, 3
	g.Send(cn.id, []byte("xxxxconfirm"), core.WaitConfirm)
	g.Send(cn.id, []byte("xxxxreply"), core.WaitDurable)
	g.Send(cn.id, []byte("xxxxwelcome"), core.WaitNothing)
	assert.Empty(t, cn.out, "sent before the disk")
	assert.Equal(t, 3, cn.held)

	g.unavailable = true
	g.releaseUnconfirming()
	assert.Equal(t, "xxxxreplyxxxxwelcome", string(cn.out), "replies wait no more once the log failed")
	assert.Equal(t, 1, cn.held, "the confirmation stays held")

	assert.False(t, g.release(3), "no news")
	assert.True(t, g.release(5))
	assert.Equal(t, "xxxxreplyxxxxwelcomexxxxconfirm", string(cn.out))
	assert.Zero(t, g.pending())
	assert.Equal(t, []*conn{cn}, g.wakes.take(nil))
}

// A task frame waits for its own record only, passing frames held for
// later ones, but never a task frame held before it.
func TestGate_TaskFramesWaitForLess(t *testing.T) {
	g, cn := testGate()
	g.lastLSN, g.durableLSN = 9, 3
	g.Send(cn.id, []byte("xxxxack"), core.WaitConfirm)
	g.SendTask(cn.id, []byte("xxxxtask1"), 4)
	g.SendTask(cn.id, []byte("xxxxtask2"), 2)
	assert.True(t, g.release(4))
	assert.Equal(t, "xxxxtask1xxxxtask2", string(cn.out))
	assert.True(t, g.release(9))
	assert.Equal(t, "xxxxtask1xxxxtask2xxxxack", string(cn.out))
}

// `debug on=true` logs frames from its own reply on, as when the gate
// asked the core: the core now tells the gate (core.FrameLog).
func TestGate_FrameLoggingFollowsDebug(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	g, cn := testGate()
	g.log = log
	c, err := core.New(core.Config{Logger: slog.New(slog.DiscardHandler), Unlogged: true}, g)
	require.NoError(t, err)
	c.Open(cn.id)
	var dec wire.Decoder
	handle := func(b *wire.Builder) {
		frame, err := b.Finish()
		require.NoError(t, err)
		m, _, err := dec.Decode(frame)
		require.NoError(t, err)
		c.Handle(cn.id, m)
	}
	hello := wire.Begin(nil, "hello")
	handle(&hello)
	assert.Empty(t, buf.String(), "logged before debug on")

	on := wire.Begin(nil, "debug")
	on.Bool("on", true)
	handle(&on)
	assert.True(t, strings.Contains(buf.String(), "debug_ok"), "the debug_ok reply is logged: %s", buf.String())

	buf.Reset()
	off := wire.Begin(nil, "debug")
	off.Bool("on", false)
	handle(&off)
	assert.NotContains(t, buf.String(), "debug_ok", "logged after debug off")
}
