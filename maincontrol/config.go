package maincontrol

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/snapshot"
)

// MaxEventLoops is the most event loops gnet runs (its internal
// gfd.EventLoopIndexMax). gnet quietly caps a larger number.
const MaxEventLoops = 256

// Defaults of the server's own settings.
const (
	DefaultListen           = "127.0.0.1:1969"
	DefaultMaxConns         = 65536
	DefaultMaxUnauthConns   = 1024
	DefaultMaxInflight      = 4096
	DefaultSnapshotEvery    = 100
	DefaultSnapshotInterval = 30 * time.Second
	// DefaultSnapshotDuty is Config.SnapshotDuty's default. With
	// --snapshot-every 100 a snapshot is due again as soon as one ends
	// under load. Unpaced, back-to-back snapshots take CPU from the event
	// loop, the log writer and the clients of a small host
	// (bench/README.md).
	DefaultSnapshotDuty = 0.25
	// MinSnapshotDuty bounds SnapshotDuty from below: at 0.05 a snapshot
	// pauses 19 times as long as it works, and lower a large one would
	// keep the log growing behind it for minutes.
	MinSnapshotDuty          = 0.05
	DefaultTickInterval      = 20 * time.Millisecond
	DefaultIdleTick          = time.Second
	DefaultFrameStallTimeout = 30 * time.Second
	DefaultReadBudget        = 5 * time.Millisecond
	// DefaultReadChunk is Config.ReadChunk's default. gnet's own, 64 KiB,
	// is over 3,000 small requests a turn. Under a flood of pipelined
	// requests, a client making one request at a time then waits far longer
	// for each. A smaller chunk costs some closed-loop throughput, as the
	// same bytes take more reads and writes. bench/README.md (section 6)
	// has the figures.
	DefaultReadChunk = 16 << 10
	minMaxOutbound   = 16 << 20
)

// Config is everything the main control needs to run.
type Config struct {
	Listen  string // host:port, or tcp://host:port
	DataDir string // "" keeps everything in memory: nothing survives a restart

	Fsync            snapshot.FsyncMode
	FsyncInterval    time.Duration
	SnapshotEvery    int           // log records between snapshots
	SnapshotInterval time.Duration // longest wait for a snapshot after a change
	// SnapshotDuty is the share of one core a background snapshot may
	// use, from MinSnapshotDuty to 1: it pauses as it writes, and rests once written
	// (pacer). 1 writes them unpaced, back to back under load.
	SnapshotDuty    float64
	SegmentBytes    int64
	RecoverTruncate bool
	// LogStallTimeout is how long one log write or fsync may hang before
	// the main control treats the disk as failed until it returns. Changes
	// are then refused with unavailable, and reads answered. 0 means 10 s.
	LogStallTimeout time.Duration
	// FS is the file layer of the log and snapshots. nil means the real
	// file system. Tests inject disk-full and I/O errors through it.
	FS snapshot.FS

	MaxConns int
	// MaxUnauthConns bounds the connections not yet through their
	// handshake. At it, or at MaxConns, a newcomer closes the oldest of
	// them (unauth.go). Default DefaultMaxUnauthConns, at most MaxConns.
	MaxUnauthConns int
	MaxInflight    int // replies awaiting disk per connection before reading pauses
	// MaxOutbound is the unsent output one connection may hold before it
	// is watched. It is then cut off unless it reads some within
	// OutboundGrace. Four times as much cuts it at once. The default is
	// max(16 MiB, 4*MaxFrame).
	MaxOutbound int
	// MaxOutboundTotal is the unsent output all connections together may
	// hold. Past it the connections holding the most are watched, and cut
	// off if they do not catch up. Default 8*MaxOutbound.
	MaxOutboundTotal int
	// OutboundGrace is how long a connection holding too much unsent
	// output has to send its peer some of it before it is cut off
	// (outbound.go). Default 1 s.
	OutboundGrace time.Duration
	// MaxPausedInbound is what one connection may send while its reading
	// is paused, with more than MaxInflight replies awaiting disk. Past it
	// the connection is refused and closed. Default max(16 MiB, 2*MaxFrame).
	MaxPausedInbound int
	// MaxPausedTotal is what all paused connections together may hold.
	// The default is 8*MaxPausedInbound.
	MaxPausedTotal int
	// MaxBuffers, when set, is what all connections' buffers together
	// may hold (--max-buffers). It gives MaxOutboundTotal and
	// MaxPausedTotal two fifths each, and MaxPartialTotal one, where those
	// are not set. Zero keeps their own defaults, 320 MiB in all at the
	// default max frame.
	MaxBuffers int
	// FrameStallTimeout is how long a connection may leave a frame
	// incomplete without sending another byte of it before it is cut off.
	// gnet holds the partial frame, up to the max frame, for as long as
	// the connection stays open. Default 30 s.
	FrameStallTimeout time.Duration
	// MaxPartialTotal is what all connections together may hold in
	// incomplete frames. Past it those that grew least recently are cut
	// off. Default max(64 MiB, 16*MaxFrame).
	MaxPartialTotal int
	// ReadBudget is how long one connection's buffered frames are handled
	// before the other connections and the ticker get the core. The
	// default is 5 ms. The rest are handled on the loop's next turn.
	ReadBudget time.Duration
	// ReadChunk is the size of each event loop's read buffer. It is the
	// most gnet reads from one connection's socket in one turn of the loop.
	// The default is DefaultReadChunk, and gnet rounds it up to a power of
	// two, at least 1 KiB. It is the share each busy connection gets per
	// turn. So it sets how long a quiet client waits behind many
	// pipelining ones. gnet reads a readable socket whatever the server
	// has left unhandled. A share smaller than what is read only piles the
	// rest up in memory.
	ReadChunk int
	// UnlockLoops lets each event loop's goroutine run on any OS thread
	// instead of keeping one (gnet's LockOSThread, see server.go). That is
	// less CPU at low and moderate rates. The tail is longer where the
	// host moves busy threads between cores.
	UnlockLoops bool
	EventLoops  int
	// TickInterval is how often the timers run while work is waiting
	// on them, such as blocked output or a snapshot. IdleTick is the
	// longest they sleep otherwise, between the core's deadlines.
	TickInterval time.Duration
	IdleTick     time.Duration
	HTTPListen   string // Prometheus /metrics and /healthz; "" means off
	// TLS, when it names a certificate and key, serves the main port
	// over TLS (tlsterm.go). Its CA then requires a client certificate
	// that CA signed. Reload reads the files again. Empty is plaintext.
	TLS tlsfiles.Files

	// PolicyFile holds per-type policies (policyfile.go). It is read at
	// start and again at each receive from Reload, as are the TLS files.
	// "" means none.
	PolicyFile string
	Reload     <-chan struct{}

	// RaftListen turns cluster mode on (protocol section 8.13): Raft's
	// transport listens there. This member's id is Advertise, or Listen.
	RaftListen string
	// Advertise, in cluster mode, is the address clients dial to reach
	// this member, and so its id; empty: Listen. It lets Listen be on all
	// interfaces.
	Advertise string
	// ClusterMembers are the voters that bootstrap a new cluster, the
	// same on every member.
	ClusterMembers []cluster.Member
	// RaftHeartbeatTimeout and RaftElectionTimeout are Raft's; zero:
	// cluster.DefaultHeartbeatTimeout and DefaultElectionTimeout.
	RaftHeartbeatTimeout, RaftElectionTimeout time.Duration
	// RaftTLS, when it names files, runs Raft's traffic over mutual TLS
	// (cluster/tlsstream.go): a certificate, its key and the CA bundle
	// every member's certificate must come from. Reload reads them again.
	RaftTLS tlsfiles.Files
	// RaftSnapshotThreshold is how many entries make a Raft snapshot;
	// zero: Raft's default.
	RaftSnapshotThreshold uint64
	// RaftTrailingLogs is how many entries a snapshot leaves in the log;
	// zero: Raft's default.
	RaftTrailingLogs uint64
	// RaftStores opens Raft's log and stable stores; nil: cluster.LogStores.
	RaftStores func(dir string) (cluster.Stores, error)

	Core   core.Config
	Logger *slog.Logger
	// LogDropped, if set, counts the log records the logger's writer
	// dropped because whoever reads the log fell behind. The daemon logs
	// through internal/logsink. It is published as
	// apollo11_log_records_dropped_total.
	LogDropped func() uint64

	// OnReady, if set, is called once recovery is done and the listener is
	// up, with the address listened on.
	OnReady func(addr string)
	// OnTick, if set, is called from the ticker after each tick. The
	// systemd watchdog keep-alive uses it to prove the event loop ticks.
	OnTick func()
	// OnStopping, if set, is called when a graceful stop begins.
	OnStopping func()
	// OnIdleSnapshot, if set, is called once a snapshot is written while
	// no change came since it began. It runs on the snapshot's goroutine.
	// The daemon then drops the pages of its binary the snapshot used.
	OnIdleSnapshot func()
}

// ErrConfig wraps configuration errors.
var ErrConfig = errors.New("invalid configuration")

func (c Config) withDefaults() (Config, error) {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = DefaultSnapshotEvery
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = DefaultSnapshotInterval
	}
	if c.SnapshotDuty == 0 {
		c.SnapshotDuty = DefaultSnapshotDuty
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxUnauthConns == 0 {
		c.MaxUnauthConns = DefaultMaxUnauthConns
	}
	if c.MaxInflight == 0 {
		c.MaxInflight = DefaultMaxInflight
	}
	if c.EventLoops == 0 {
		c.EventLoops = 1
	}
	if c.MaxPausedInbound == 0 {
		c.MaxPausedInbound = max(16<<20, 2*c.Core.MaxFrame)
	}
	if c.MaxBuffers > 0 {
		share := func(v *int, fifths int) {
			if *v == 0 {
				*v = max(1, c.MaxBuffers/5*fifths)
			}
		}
		share(&c.MaxOutboundTotal, 2)
		share(&c.MaxPausedTotal, 2)
		share(&c.MaxPartialTotal, 1)
	}
	if c.MaxPausedTotal == 0 {
		c.MaxPausedTotal = 8 * c.MaxPausedInbound
	}
	if c.FrameStallTimeout == 0 {
		c.FrameStallTimeout = DefaultFrameStallTimeout
	}
	if c.ReadBudget == 0 {
		c.ReadBudget = DefaultReadBudget
	}
	if c.ReadChunk == 0 {
		c.ReadChunk = DefaultReadChunk
	}
	if c.TickInterval == 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.IdleTick == 0 {
		c.IdleTick = DefaultIdleTick
	}
	if c.Core.MaxFrame == 0 {
		c.Core.MaxFrame = 1 << 20
	}
	if c.MaxOutbound == 0 {
		c.MaxOutbound = max(minMaxOutbound, 4*c.Core.MaxFrame)
	}
	if c.MaxPartialTotal == 0 {
		c.MaxPartialTotal = max(64<<20, 16*c.Core.MaxFrame)
	}
	if c.OutboundGrace == 0 {
		c.OutboundGrace = time.Second
	}
	if c.MaxOutboundTotal == 0 {
		c.MaxOutboundTotal = 8 * c.MaxOutbound
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Core.Logger == nil {
		c.Core.Logger = c.Logger
	}
	if err := checkListen("listen address", c.Listen, true); err != nil {
		return c, err
	}
	if c.Advertise != "" && c.RaftListen == "" {
		return c, fmt.Errorf("%w: --advertise names a cluster member: it needs --raft-listen", ErrConfig)
	}
	if c.HTTPListen != "" {
		if err := checkListen("http-listen address", c.HTTPListen, false); err != nil {
			return c, err
		}
	}
	if err := CheckSnapshotDuty(c.SnapshotDuty); err != nil {
		return c, fmt.Errorf("%w: SnapshotDuty %v: %w", ErrConfig, c.SnapshotDuty, err)
	}
	if c.SnapshotEvery < 1 || c.SnapshotInterval < 0 || c.MaxConns < 1 || c.MaxUnauthConns < 1 || c.MaxInflight < 1 || c.EventLoops < 1 || c.MaxOutbound < 1 || c.MaxOutboundTotal < 1 || c.OutboundGrace < 0 || c.MaxPartialTotal < 1 || c.FrameStallTimeout < 0 || c.ReadBudget < 0 || c.ReadChunk < 0 || c.MaxPausedInbound < 1 || c.MaxPausedTotal < 1 || c.MaxBuffers < 0 {
		return c, fmt.Errorf("%w: limits must be positive", ErrConfig)
	}
	if c.EventLoops > MaxEventLoops {
		return c, fmt.Errorf("%w: %d event loops: want 1 to %d (gnet runs at most %d)", ErrConfig, c.EventLoops, MaxEventLoops, MaxEventLoops)
	}
	return c, nil
}

// CheckSnapshotDuty says why d is no SnapshotDuty, or nil: it must be
// from MinSnapshotDuty to 1. NaN is none.
func CheckSnapshotDuty(d float64) error {
	if d >= MinSnapshotDuty && d <= 1 {
		return nil
	}
	return fmt.Errorf("want a number from %v to 1", MinSnapshotDuty)
}
