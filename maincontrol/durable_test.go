package maincontrol

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// wakeConn is a stubConn whose wakes, which come from other goroutines
// here, arrive on a channel.
type wakeConn struct {
	stubConn
	woken chan struct{}
}

func (c *wakeConn) Wake(gnet.AsyncCallback) error {
	select {
	case c.woken <- struct{}{}:
	default:
	}
	return nil
}

// The log's writer does not wait for Server.mu. While the loop holds it
// for a long turn, the writer goes on: a record appended during the turn
// becomes durable before the turn ends. Before, the writer waited in
// onDurable for the lock, and wrote and fsynced nothing until the turn
// ended. A frame held for a record is released once the lock is free.
func TestDurable_WriterDoesNotWaitForTheLoop(t *testing.T) {
	s, err := newServer(Config{DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer s.closeStore()
	c := &wakeConn{woken: make(chan struct{}, 1)}
	_, action := s.OnOpen(c)
	require.Equal(t, gnet.None, action)
	cn := c.ctx.(*conn)
	reply, err := wire.AppendFrame(nil, wire.NewMessage("pong"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	s.mu.Lock() // a long turn of the loop
	first := s.gate.Record([]byte("a change"))
	s.gate.Send(cn.id, reply, core.WaitConfirm)
	require.Equal(t, 1, cn.held, "the reply waits for its record")
	// The writer reports first durable (and, before, then waited for the
	// lock).
	require.NoError(t, s.store.WaitDurable(ctx, first))
	second := s.gate.Record([]byte("another change"))
	err = s.store.WaitDurable(ctx, second)
	s.mu.Unlock()
	require.NoError(t, err, "a record appended while the loop holds the lock waited for it")

	select {
	case <-c.woken:
	case <-ctx.Done():
		t.Fatal("the held reply was not released once the lock was free")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Zero(t, cn.held)
	assert.True(t, bytes.Contains(cn.out, reply), "the released reply is queued for writing")
}

// The loop takes the durable mark at the start of its next callback, so a
// reply held for the disk goes out without waiting for the releaser. The
// releaser is stopped here to leave the loop alone to do it.
func TestDurable_NextTurnReleasesHeldFrames(t *testing.T) {
	s, err := newServer(Config{DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer s.closeStore()
	s.stopReleaser()
	held := &wakeConn{woken: make(chan struct{}, 1)}
	_, action := s.OnOpen(held)
	require.Equal(t, gnet.None, action)
	cn := held.ctx.(*conn)
	other := &stubConn{}
	_, action = s.OnOpen(other)
	require.Equal(t, gnet.None, action)
	reply, err := wire.AppendFrame(nil, wire.NewMessage("pong"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	s.mu.Lock()
	lsn := s.gate.Record([]byte("a change"))
	s.gate.Send(cn.id, reply, core.WaitConfirm)
	s.mu.Unlock()
	require.NoError(t, s.store.WaitDurable(ctx, lsn))
	// The store reports lsn durable just before it calls onDurable, which
	// stores the mark and then kicks. The releaser is stopped, so the kicks
	// are ours to take; an earlier kick may be pending, hence the loop.
	for s.durable.lsn.Load() < lsn {
		select {
		case <-s.durable.kick:
		case <-ctx.Done():
			t.Fatal("onDurable never came")
		}
	}
	s.mu.Lock()
	assert.Equal(t, 1, cn.held, "nothing released it yet")
	s.mu.Unlock()

	// Another connection's turn: it finds the mark and releases the reply.
	require.Equal(t, gnet.None, s.OnTraffic(other))
	select {
	case <-held.woken:
	default:
		t.Fatal("the turn did not wake the connection whose reply it released")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Zero(t, cn.held)
	assert.True(t, bytes.Contains(cn.out, reply))
}
