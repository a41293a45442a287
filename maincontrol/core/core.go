package core

import (
	"context"
	"log/slog"
	"math"
	"math/rand/v2"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/wire"
)

// Core holds all of the main control's state and rules.
type Core struct {
	cfg   Config
	obs   Observer
	log   *slog.Logger
	fx    Effects
	clock Clock
	rnd   *rand.Rand

	tasks table
	hist  history // the latest transitions, for the dashboard
	types map[string]*taskType
	// typeMark numbers the registers applied, for deduplicating a
	// register's types (taskType.mark).
	typeMark uint64
	dirty    []*taskType
	urgent   urgentTypes       // dispatchDirty's heap, kept for its room
	keys     map[string]uint64 // idempotency key -> task id
	nextID   uint64
	seq      uint64 // queue and end order
	counts   [NumStates + 1]int
	timers   timerHeap
	// timersCompactAt is the heap size at which addTimer next compacts.
	timersCompactAt int
	retention       fifo // terminal tasks in the order they ended
	retryWait       fifo // retrying tasks waiting for the retry cap
	armed           int  // retrying tasks whose backoff runs
	dependents      dependents
	depsMet         map[uint64]depCursor // waiting task -> its first dependency not known to have succeeded (depsSucceeded)
	released        []uint64             // dependents of the task the last end record closed
	state           map[string]string
	stateVer        uint64
	stateShared     bool // a snapshot holds c.state: copy before writing
	// stateTok is new at each Freeze after the state changed. Two
	// snapshots, even of different cores, hold the same state when they
	// hold the same token. Snapshots rewrite the state only when it differs.
	stateTok *uint64
	// stateBytes is the shared state's size as the cap counts it.
	stateBytes int64
	// pendingBytes and retainedBytes are what the tasks not yet ended,
	// and the ended ones kept, hold (task.bytes).
	pendingBytes, retainedBytes int64

	execs  map[string]*executor
	regSeq uint64
	// execLog limits the logs a peer can cause at will. Those are
	// registrations, disconnects, losses and held-back cancels (loglimit.go).
	execLog logLimit
	// liveExecs counts executors with a connection. regBytes sums
	// executor.regBytes. kept queues the disconnected ones (kept.go).
	liveExecs int
	regBytes  int
	descBytes int // all executors' descBytes
	kept      []keptRef
	keptHead  int
	liveness  livenessHeap
	peers     map[PeerID]*peer
	// lastPeer is the peer of the latest Handle. Messages come in runs
	// from one connection, as the server hands over a whole read at once.
	lastPeer *peer
	hsQueue  []hsDeadline
	waiters  waiterSet
	// waitRefusals are the texts of waitRoom's two refusals, kept while
	// their numbers hold: a wait flood past a cap meets them per frame.
	waitRefusals [2]numText
	// submitters names the connection of each task not yet ended that
	// counts against its --max-pending-per-conn share (connquota.go).
	submitters map[uint64]*peer
	// dones holds `done` replies left for later ticks. doneFrames and
	// doneBytes are what this tick may still send (dones.go).
	dones                 doneQueue
	doneFrames, doneBytes int

	startMs   int64
	nowMs     int64 // the instant of the input being handled, when nowSet
	nowSet    bool
	available bool
	debug     bool
	debugLog  bool // the logger takes debug records (refreshDebug)
	loading   bool // snapshot entries loaded, indexes not yet rebuilt

	rec     record   // scratch for the record being committed
	recBuf  []byte   // scratch for its encoding
	frame   []byte   // scratch for frames
	listed  []token  // scratch: a heartbeat's running= list
	idsBuf  []uint64 // scratch
	lostBuf []uint64 // scratch
	// depsBuf holds the depends_on ids of the submit being handled
	// (submitReq.deps), kept for the next. A long list would otherwise
	// grow a new slice by doubling each time.
	depsBuf  []uint64
	depMarks depMarks // deduplicates a long depends_on list (parseDeps)
	// sub is the submit being parsed, which v1Fields' rows fill in.
	sub submitReq

	// epoch is this run's (BeginEpoch). nextEpoch is the one the next run
	// takes, kept in snapshots.
	epoch, nextEpoch uint64
	// lastMark is the log position of the latest record (Effects.Record).
	// stateMark is that of the latest change to the shared state.
	lastMark, stateMark uint64
	gates               gates        // what task frames wait for (idx_gates.go)
	pol                 *policyState // per-type policies (policy.go); nil: none

	// paused holds the paused task types (pause.go). progs holds the latest
	// progress of running dispatches (durations.go). leftMs is when the state
	// a task last left began (setState).
	paused map[string]struct{}
	progs  map[uint64]taskProgress
	runs   runIndex // runs (protocol section 8.10)
	leftMs int64
	ops    OpsCounts

	// scheds holds the schedules by name (schedule.go). schedWake is the
	// earliest time, in ms, one of them needs the tick.
	scheds    map[string]*schedule
	schedWake int64

	// role and leader: a cluster member's Raft role and the leader's id
	// (cluster.go). A single main control stays RoleLeader.
	role   Role
	leader string
}

type peerKind uint8

const (
	peerNew peerKind = iota
	peerClient
	peerExecutor
)

type peer struct {
	id     PeerID
	kind   peerKind
	remote string // its address, for the operator's logs ("" when not given)
	nonce  string
	name   string // the client= of its hello, for the operator's logs
	admin  bool   // may send the admin messages (protocol section 8.2)
	exec   *executor
	waits  *peerWaits // nil before its first wait=true submit
	// pending counts its tasks not yet ended, with --max-pending-per-conn.
	pending int
}

type hsDeadline struct {
	peer PeerID
	at   int64
	// last bounds the graces: a second handshake timeout past the first
	// deadline. A server late that long is stalled, and the stall's own
	// handling applies.
	last int64
}

// New returns an empty core. fx receives its outputs.
func New(cfg Config, fx Effects) (*Core, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Nonce == nil {
		cfg.Nonce = func() string {
			n, err := auth.NewNonce()
			if err != nil {
				panic(err) // crypto/rand does not fail on supported platforms
			}
			return n
		}
	}
	c := &Core{
		cfg:       cfg,
		obs:       cfg.Observer,
		log:       cfg.Logger,
		fx:        fx,
		clock:     cfg.Clock,
		rnd:       cfg.Rand,
		types:     make(map[string]*taskType),
		keys:      make(map[string]uint64),
		nextID:    1,
		depsMet:   make(map[uint64]depCursor),
		state:     make(map[string]string),
		execs:     make(map[string]*executor),
		paused:    make(map[string]struct{}),
		progs:     make(map[uint64]taskProgress),
		scheds:    make(map[string]*schedule),
		schedWake: math.MaxInt64,
		peers:     make(map[PeerID]*peer),
		waiters:   newWaiterSet(),
		available: true,
	}
	c.runs.init()
	c.startMs = c.now()
	c.refillDones()
	c.refreshDebug()
	c.warnSmallByteCaps()
	return c, nil
}

// now returns the time in ms, read once per input (Handle, Tick). So
// one decision sees one instant and the clock is not read a dozen times.
func (c *Core) now() int64 {
	if c.nowSet {
		return c.nowMs
	}
	return c.clock.Now().UnixMilli()
}

// hold fixes now() for the duration of one input, unless it is already
// fixed. It reports whether it fixed it, and so must release it.
func (c *Core) hold() bool {
	if c.nowSet {
		return false
	}
	c.nowMs, c.nowSet = c.clock.Now().UnixMilli(), true
	return true
}

func (c *Core) release() { c.nowSet = false }

// HoldClock reads the clock once for a batch of inputs that arrived
// together, the frames of one read. Until ReleaseClock, every Handle sees
// that instant. Reading the clock per frame costs a few percent of the
// server's CPU at full load. Holds do not nest, so the first ReleaseClock
// ends it.
func (c *Core) HoldClock() { c.hold() }

// ReleaseClock ends a HoldClock.
func (c *Core) ReleaseClock() { c.release() }

// Debug reports whether frame logging is on (`debug on=true`).
func (c *Core) Debug() bool { return c.debug }

// SetAvailable tells the core whether the log accepts writes. While it does
// not, requests that change state are refused with `unavailable` and
// nothing is dispatched. Reads are still served.
func (c *Core) SetAvailable(ok bool) {
	if c.available == ok {
		return
	}
	c.available = ok
	if ok {
		c.log.Info("log writable again: accepting changes")
		for _, tt := range c.types {
			c.markDirty(tt)
		}
		c.dispatchDirty()
	} else {
		c.log.Error("log not writable: refusing changes with code=unavailable")
	}
}

// Available reports whether changes are accepted.
func (c *Core) Available() bool { return c.available }

// Open registers a new connection and sends its welcome.
func (c *Core) Open(id PeerID) { c.OpenFrom(id, "") }

// OpenFrom is Open for a connection from a known address. The logs of its
// handshake refusals and errors name it, since a peer id alone cannot tell
// an operator who failed to authenticate.
func (c *Core) OpenFrom(id PeerID, remote string) {
	now := c.now()
	p := &peer{id: id, remote: remote, nonce: c.cfg.Nonce()}
	c.peers[id] = p
	at := now + c.cfg.HandshakeTimeout.Milliseconds()
	c.hsQueue = append(c.hsQueue, hsDeadline{peer: id, at: at, last: at + c.cfg.HandshakeTimeout.Milliseconds()})
	b := wire.Begin(c.frame[:0], wire.KindWelcome)
	b.UintK(kProto, 1)
	b.StrK(kServer, "apollo11/"+c.cfg.Version)
	b.StrK(kNonce, p.nonce)
	if c.cfg.Token != nil {
		b.StrK(kAuth, "hmac-sha256")
	} else {
		b.StrK(kAuth, "none")
	}
	b.UintK(kMaxFrame, uint64(c.cfg.MaxFrame))
	if c.cfg.Cluster != nil {
		b.StrK(kFeatures, clusterFeatureList)
	} else {
		b.StrK(kFeatures, featureList)
	}
	c.greet(id, &b)
}

// Closed forgets a connection that is gone. An executor's tasks stay with
// it until it re-registers or its heartbeat timeout passes.
func (c *Core) Closed(id PeerID) {
	p := c.peers[id]
	if p == nil {
		return
	}
	delete(c.peers, id)
	if c.lastPeer == p {
		c.lastPeer = nil
	}
	c.waiters.dropPeer(p.waits) // nobody left to tell: a task that never ends would keep them
	c.dropPeerRunWaits(id)
	if e := p.exec; e != nil && e.peer == id {
		e.peer = 0
		c.liveExecs--
		c.refreshHeaps(e)
		c.logLimited(slog.LevelInfo, "executor disconnected", "executor", e.id, "tasks", e.tasks.len())
		c.keepDisconnected(e)
	}
}

// Handle processes one decoded message from a peer. m may borrow from the
// server's read buffer, so the core copies what it keeps.
func (c *Core) Handle(id PeerID, m *wire.Message) {
	p := c.lastPeer
	if p == nil || p.id != id {
		if p = c.peers[id]; p == nil {
			return
		}
		c.lastPeer = p
	}
	if c.hold() {
		defer c.release()
	}
	switch p.kind {
	case peerNew:
		c.handshake(p, m)
	case peerClient:
		c.clientMessage(p, m)
	case peerExecutor:
		p.exec.lastSeen = c.now()
		c.executorMessage(p, m)
	}
	if !c.serving() {
		return // a follower makes no records: the leader's come by replay
	}
	c.settleRuns()
	c.dispatchDirty()
}

// Tick runs everything that is due. That covers timers, handshake and
// heartbeat timeouts, and retention. The server calls it every few tens of ms.
func (c *Core) Tick() {
	if c.hold() {
		defer c.release()
	}
	now := c.now()
	c.refreshDebug()
	if !c.serving() {
		// Only the leader's timeouts, retries and schedules fire.
		c.expireHandshakes(now)
		c.compactRunsDirty()
		return
	}
	c.refillDones()
	c.flushDones()
	c.expireHandshakes(now)
	c.fireTimers(now)
	c.checkLiveness(now)
	c.applyRetention(now)
	c.policyTick(now)
	c.schedTick(now)
	c.runsTick(now)
	c.dispatchDirty()
}

// PeerCount returns the number of open connections.
func (c *Core) PeerCount() int { return len(c.peers) }

// Greeted reports whether a peer is through its handshake. It said hello
// or registered, with the token's MAC when one is set.
func (c *Core) Greeted(id PeerID) bool {
	p := c.peers[id]
	return p != nil && p.kind != peerNew
}

func (c *Core) debugEnabled() bool { return c.debugLog }

// refreshDebug rereads whether the logger takes debug records. Asking it
// on every transition costs more than the rest of a transition's logging
// check. So the level is read again at every tick instead.
func (c *Core) refreshDebug() { c.debugLog = c.log.Enabled(context.Background(), slog.LevelDebug) }
