package maincontrol

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/maincontrol/dashboard"
	"github.com/apollo11/apollo11/snapshot"
	"github.com/apollo11/apollo11/wire"
)

// readBudgetCheck is how many frames are handled between two looks at
// the clock for Config.ReadBudget. A round of 1,024 ordinary frames takes
// about a millisecond, so under load the budget is rarely reached.
const readBudgetCheck = 64

// Server is a running main control.
type Server struct {
	gnet.BuiltinEventEngine

	cfg   Config
	log   *slog.Logger
	store *snapshot.Store // nil: memory only

	mu    sync.Mutex
	core  *core.Core
	gate  *gate // the core's Effects: frames wait for their records
	flow  *flow // what peers may make the server hold
	wakes wakeList
	// nextPeer numbers the connections; dec decodes their frames.
	nextPeer core.PeerID
	dec      wire.Decoder
	stopping bool
	snap     snapSchedule // lifecycle.go
	timers   timers       // ticks.go
	refusals refusalLog
	unauth   unauthQueue // connections awaiting their handshake (unauth.go)
	evicting int         // connections evicted from unauth, not yet closed

	// TLS on the main port (tlsterm.go); tlsConfig nil means plaintext.
	tlsFiles    *tlsfiles.Loader
	raftTLS     *tlsfiles.Loader // Raft's files in cluster mode, nil: plain TCP
	tlsConfig   *tls.Config
	shakes      shakeQueue     // connections in their TLS handshake
	terminating sync.WaitGroup // TLS handshakes under way
	tlsLog      tlsFailureLog

	loops     *gnet.Client
	acceptor  *acceptor
	metrics   *serverMetrics
	http      *http.Server
	dash      *dashboard.Dashboard // served by http
	dashActor *dashboard.Loopback  // the dashboard's client connection to the main port

	policies *core.Policies // the last loaded, under mu
	cl       *clusterMode   // nil: a single main control (cluster.go)
	durable  durableHandoff // the log's durable mark (durable.go)
}

func (s *Server) now() time.Time { return s.cfg.Core.Clock.Now() }

// Run recovers the data dir and serves until ctx is cancelled. Then it
// stops gracefully. It stops reading, lets replies awaiting disk go out,
// closes connections, saves a snapshot and closes the log.
func Run(ctx context.Context, cfg Config) error {
	s, err := newServer(cfg)
	if err != nil {
		return err
	}
	return s.serve(ctx)
}

func newServer(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Core.Clock == nil {
		cfg.Core.Clock = core.SystemClock{}
	}
	cfg.Core.Unlogged = cfg.DataDir == "" // memory only: no log to feed
	s := &Server{cfg: cfg, log: cfg.Logger}
	if cfg.RaftListen != "" {
		cfg.Core.Cluster = clusterOps{s}
	}
	s.snap.giveUp = make(chan struct{})
	s.flow = newFlow(&s.cfg, s.log, &s.wakes)
	s.gate = newGate(cfg.Core.Clock, s.log, s.flow, &s.wakes)
	s.dec.MaxFrame = cfg.Core.MaxFrame
	s.metrics = newServerMetrics(s)
	if cfg.Core.Observer == nil {
		cfg.Core.Observer = s.metrics
	}
	s.cfg.Core = cfg.Core // a cluster member makes new cores like this one
	c, err := core.New(cfg.Core, s.gate)
	if err != nil {
		return nil, err
	}
	s.core = c
	if err := s.loadTLS(); err != nil {
		return nil, err
	}
	if err := s.recover(); err != nil {
		return nil, err
	}
	if err := s.loadPolicies(); err != nil {
		s.closeStore()
		return nil, err
	}
	return s, nil
}

// recover opens the data dir and replays it into the core (Restore).
func (s *Server) recover() error {
	if s.cfg.RaftListen != "" {
		return s.startCluster()
	}
	if s.cfg.DataDir == "" {
		s.log.Warn("no data dir: state is kept in memory only and lost on restart")
		_, err := Restore(nil, s.core, RestoreOptions{})
		return err
	}
	if err := checkDataDir(s.cfg.DataDir); err != nil {
		return err
	}
	start := time.Now()
	st, err := snapshot.Open(snapshot.Options{Dir: s.cfg.DataDir, FS: s.cfg.FS, Fsync: s.cfg.Fsync,
		FsyncInterval: s.cfg.FsyncInterval, SegmentBytes: s.cfg.SegmentBytes,
		RecoverTruncate: s.cfg.RecoverTruncate, StallTimeout: s.cfg.LogStallTimeout, Logger: s.log})
	if err != nil {
		return err
	}
	// The records recovery makes (an epoch, settled waiting tasks) go
	// to this log.
	s.store, s.gate.store = st, st
	s.gate.lastLSN, s.gate.durableLSN = st.LastLSN(), st.LastLSN()
	res, err := Restore(st, s.core, RestoreOptions{Serve: true, Logger: s.log})
	if err != nil {
		_ = st.Close()
		return fmt.Errorf("cannot recover %s: %w", s.cfg.DataDir, err)
	}
	s.snap.last, s.snap.lastLSN = res.Loaded, res.SnapshotLSN
	s.gate.durableLSN = st.DurableLSN()
	if s.gate.lastLSN > res.SnapshotLSN {
		// Records replayed from the log count as not yet in a snapshot
		// (spec section 7), as if written now. Otherwise a crash before
		// the snapshot leaves them to be replayed at every start until
		// some new change comes, and a stop saves no snapshot.
		s.gate.unsnapped = int(min(s.gate.lastLSN-res.SnapshotLSN, uint64(math.MaxInt32)))
		s.gate.firstUnsnapped = s.now()
	}
	s.log.Info("data dir recovered", "dir", s.cfg.DataDir, "snapshot_lsn", res.SnapshotLSN, "last_lsn", s.gate.lastLSN,
		"epoch", s.core.Epoch(), "took", time.Since(start).Round(time.Millisecond))
	s.startReleaser()
	st.Start(s.onDurable, s.onHealth)
	return nil
}

func (s *Server) serve(ctx context.Context) error {
	perConn := 1
	if s.tlsConfig != nil {
		perConn = tlsConnDescriptors
	}
	maxConns, err := fitMaxConns(s.cfg.MaxConns, perConn, fdReserve(s.cfg.EventLoops, s.cl != nil), openFileLimit(), s.log)
	if err != nil {
		s.closeStore()
		return err
	}
	s.cfg.MaxConns = maxConns
	s.cfg.MaxUnauthConns = min(s.cfg.MaxUnauthConns, maxConns)
	ln, err := listen(s.cfg.Listen)
	if err != nil {
		s.closeStore()
		return fmt.Errorf("cannot listen on %s: %w", s.cfg.Listen, err)
	}
	handOver := s.handOver
	if s.tlsConfig != nil {
		handOver = s.handOverTLS
	}
	s.acceptor = newAcceptor(ln, s.log, handOver)
	// A gnet Client, not a gnet server. Its event loops serve the
	// connections the acceptor enrolls, and it listens on nothing.
	// accept.go says why.
	loops, err := gnet.NewClient(s,
		gnet.WithMulticore(s.cfg.EventLoops > 1),
		gnet.WithNumEventLoop(s.cfg.EventLoops),
		gnet.WithTicker(true),
		// Go's accept already set TCP_NODELAY on the socket gnet
		// duplicates. gnet setting it again would leak the duplicate if
		// that failed, as Enroll returns without closing it.
		gnet.WithTCPNoDelay(gnet.TCPDelay),
		gnet.WithLogger(gnetLogger{s.log}),
		gnet.WithReadBufferCap(s.cfg.ReadChunk),
		// Each loop keeps one OS thread unless UnlockLoops says not to.
		// Unlocked, the one loop of a busy main control moves between
		// threads, and each move is a wake-up that waits for a core. That
		// raises the latency tail on a small host. The price is paid when a
		// loop falls idle. gnet's poller yields (runtime.Gosched) before it
		// blocks, and a locked goroutine's yield hands its thread off and
		// back. That is more CPU per wake-up at low rates. bench/README.md
		// (the Headline section) has the figures for both.
		gnet.WithLockOSThread(!s.cfg.UnlockLoops),
	)
	if err == nil {
		err = loops.Start()
	}
	if err != nil {
		_ = ln.Close()
		s.closeStore()
		return fmt.Errorf("cannot start the event loops: %w", err)
	}
	s.loops = loops
	go s.acceptor.run()
	go s.watchReload(ctx)
	loopDied := s.watchTicks(s.cfg.watchEvery())
	if err := s.startHTTP(); err != nil {
		s.stopAccepting()
		s.stopLoops()
		s.closeStore()
		return err
	}
	if s.cfg.OnReady != nil {
		s.cfg.OnReady(s.cfg.Listen)
	}
	if s.cfg.Core.Token == nil && beyondLoopback(s.cfg.Listen) {
		s.log.Warn("listening beyond loopback without auth: anyone who reaches this port can submit and cancel tasks and register as an executor; give --token-file",
			"listen", s.cfg.Listen)
	}
	if s.cl != nil && s.cfg.RaftTLS.Empty() && beyondLoopback(s.cfg.RaftListen) {
		s.log.Warn("raft listening beyond loopback without TLS: anyone who reaches this port can rewrite the replicated state; give --raft-tls-cert, --raft-tls-key and --raft-tls-ca",
			"raft_listen", s.cfg.RaftListen)
	}
	s.log.Info("main control ready", "listen", ln.Addr().String(), "data_dir", s.cfg.DataDir,
		"fsync", s.cfg.Fsync.String(), "auth", s.cfg.Core.Token != nil,
		"tls", s.tlsConfig != nil, "event_loops", s.cfg.EventLoops)
	var clusterFailed <-chan error
	if s.cl != nil {
		clusterFailed = s.cl.fatal
	}
	select {
	case <-ctx.Done():
	case err := <-clusterFailed:
		s.mu.Lock()
		s.stopping = true
		s.mu.Unlock()
		s.acceptor.abandon()
		s.stopHTTP()
		s.stopLoops()
		s.cl.close()
		return err
	case <-loopDied:
		// Its connections are gone or frozen. Stop, and let the
		// supervisor start a whole main control again. The other loops
		// stop before the log closes. A change they took after it would
		// be confirmed without a record (gate.go, Record).
		s.mu.Lock()
		s.stopping = true
		s.mu.Unlock()
		s.acceptor.abandon()
		s.stopHTTP()
		s.stopLoops()
		s.closeCluster()
		s.closeStore()
		return errors.New("an event loop stopped (see the gnet error above)")
	}
	return s.shutdown()
}

// OnOpen registers the connection with the core, which says welcome.
func (s *Server) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	s.mu.Lock()
	if s.stopping || !s.makeRoom() {
		frame := s.refuseConn(gc)
		s.mu.Unlock()
		return frame, gnet.Close
	}
	s.nextPeer++
	cn := &conn{id: s.nextPeer, gc: gc}
	remote := remoteString(gc)
	if o, ok := gc.Context().(*tlsOrigin); ok {
		cn.origin, remote = o, o.remote
	}
	s.gate.conns[cn.id] = cn
	s.unauth.push(cn)
	gc.SetContext(cn)
	s.core.OpenFrom(cn.id, remote)
	s.wantTick()
	out, _ := s.takeOutput(cn)
	wakes := s.wakes.take(cn)
	s.mu.Unlock()
	wake(wakes)
	return out, gnet.None
}

// OnClose tells the core the peer is gone.
func (s *Server) OnClose(gc gnet.Conn, err error) gnet.Action {
	cn, _ := gc.Context().(*conn)
	if cn == nil {
		return gnet.None
	}
	s.mu.Lock()
	cn.dead = true
	s.flow.forget(cn)
	s.gate.forget(cn)
	s.unauth.remove(cn)
	if cn.evicted {
		s.evicting--
	}
	s.core.Closed(cn.id)
	s.wantTick()
	wakes := s.wakes.take(nil)
	s.mu.Unlock()
	wake(wakes)
	if cn.origin != nil {
		cn.origin.lastWords(s.cfg.OutboundGrace)
	}
	return gnet.None
}

// OnTraffic decodes every whole frame buffered, hands each to the core,
// then writes what this connection has released.
func (s *Server) OnTraffic(gc gnet.Conn) gnet.Action {
	cn, _ := gc.Context().(*conn)
	if cn == nil {
		return gnet.Close
	}
	cn.hs.entering.Store(true)
	s.mu.Lock()
	cn.hs.entering.Store(false)
	s.takeDurable()
	consumed := cn.flow.consumed
	more := s.readFrames(cn, gc)
	cn.hs.heard = cn.flow.consumed + gc.InboundBuffered()
	if why := s.flow.notePartial(cn, gc, more, cn.flow.consumed != consumed); why != "" {
		s.cutOff(cn, gc, why)
	}
	if s.gate.unsnapped >= s.cfg.SnapshotEvery {
		// This runs at the count, not at the next tick. Under load a
		// tick's worth of records is far more than --snapshot-every.
		s.maybeSnapshot()
	}
	out, closeNow := s.takeOutput(cn)
	wakes := s.wakes.take(cn)
	s.mu.Unlock()
	wake(wakes)
	if len(out) > 0 {
		if _, err := gc.Write(out); err != nil {
			return gnet.Close
		}
	}
	s.mu.Lock()
	if len(out) > 0 && len(cn.spare) == 0 && cap(out) <= 1<<20 {
		cn.spare = out[:0] // reuse the buffer: gnet copied what it could not send
	}
	cut := s.flow.noteUnsent(cn, gc.OutboundBuffered(), len(out))
	s.wantTick() // after the frames and the output: both may bring a deadline
	s.mu.Unlock()
	if closeNow {
		return gnet.Close
	}
	if cut != "" {
		s.log.Warn("connection closed: "+cut, "peer", cn.id, "remote", gc.RemoteAddr())
		return gnet.Close
	}
	if more {
		_ = gc.Wake(nil) // read on once this output is written
	}
	return gnet.None
}

// takeOutput swaps out the connection's released frames for writing. With
// nothing to write it swaps nothing. A connection woken after its own read
// already flushed it would otherwise drop one of its two buffers. Its next
// frames would then grow a new one from nothing.
func (s *Server) takeOutput(cn *conn) ([]byte, bool) {
	cn.queued = false
	var out []byte
	if len(cn.out) > 0 {
		out = cn.out
		cn.out, cn.spare = cn.spare, nil
	}
	if s.flow.mayResume(cn) {
		s.wakes.mark(cn) // resume reading on the next wake
	}
	return out, cn.closeAfter
}

// remoteString is the peer's address for the logs.
func remoteString(gc gnet.Conn) string {
	if a := gc.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}

func wake(cs []*conn) {
	for _, cn := range cs {
		_ = cn.gc.Wake(nil) // a closed connection ignores it
	}
}

// onHealth runs on the log's writer goroutine when writes fail or recover.
func (s *Server) onHealth(err error) {
	s.mu.Lock()
	if err != nil {
		s.log.Error("log write failed or stalled: refusing changes until the disk recovers", "err", err)
	}
	// The gate goes first. Frames the core sends as it changes its
	// mind follow the log's health as it is now.
	s.gate.unavailable = err != nil
	s.core.SetAvailable(err == nil)
	if err != nil {
		s.gate.releaseUnconfirming()
		s.giveUpSnapshot()
	}
	s.wantTick()
	wakes := s.wakes.take(nil)
	s.mu.Unlock()
	wake(wakes)
}

// gnetLogger routes gnet's own logs into slog.
type gnetLogger struct{ l *slog.Logger }

func (g gnetLogger) Debugf(f string, a ...any) { g.l.Debug("gnet: " + fmt.Sprintf(f, a...)) }
func (g gnetLogger) Infof(f string, a ...any)  { g.l.Debug("gnet: " + fmt.Sprintf(f, a...)) }
func (g gnetLogger) Warnf(f string, a ...any)  { g.l.Warn("gnet: " + fmt.Sprintf(f, a...)) }
func (g gnetLogger) Errorf(f string, a ...any) { g.l.Error("gnet: " + fmt.Sprintf(f, a...)) }
func (g gnetLogger) Fatalf(f string, a ...any) { g.l.Error("gnet: " + fmt.Sprintf(f, a...)) }
