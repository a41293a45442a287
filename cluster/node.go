// Package cluster replicates the main control's change log with Raft
// (github.com/hashicorp/raft). It sets up a member: its transport, its
// log, stable and snapshot stores, and the bootstrap of a new cluster. It
// turns the main control's records into Raft entries (Proposer) and
// committed entries back into records for the main control (App). It
// knows nothing of tasks, sockets to clients or the event loop.
package cluster

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/apollo11/apollo11/cluster/logstore"
	"github.com/apollo11/apollo11/internal/tlsfiles"
)

// Defaults chosen for loopback and a LAN: a follower calls an election
// 400 to 800 ms after the leader's last contact, so a killed leader is
// replaced well within 2 s.
const (
	DefaultHeartbeatTimeout = 400 * time.Millisecond
	DefaultElectionTimeout  = 400 * time.Millisecond
)

// Member is a voter or non-voter of the configuration. ID is its client
// address, as clients dial it; Raft is its Raft transport address.
type Member struct {
	ID    string
	Raft  string
	Voter bool
}

// ParseMembers reads `ID=RAFTADDR,...`, every one a voter.
func ParseMembers(s string) ([]Member, error) {
	var ms []Member
	seen := map[string]bool{}
	for item := range strings.SplitSeq(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("cluster member %q: want ID=RAFTADDR (the member's client address = its raft address)", item)
		}
		for _, a := range []string{id, addr} {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return nil, fmt.Errorf("cluster member %q: %q is not host:port", item, a)
			}
		}
		if seen[id] || seen["raft "+addr] {
			return nil, fmt.Errorf("cluster member %q: id or raft address given twice", item)
		}
		seen[id], seen["raft "+addr] = true, true
		ms = append(ms, Member{ID: id, Raft: addr, Voter: true})
	}
	return ms, nil
}

// Stores are Raft's log and stable stores, and how to close them.
type Stores struct {
	Log    raft.LogStore
	Stable raft.StableStore
	Close  func() error
}

// LogStores opens the project's own log (cluster/logstore) in dir/log,
// as log and stable store both. A batch of entries costs one write and
// one fsync, where raft-boltdb/v2 takes two fsyncs (bench/README.md).
func LogStores(dir string) (Stores, error) {
	if _, err := os.Stat(filepath.Join(dir, "raft.db")); err == nil {
		return Stores{}, fmt.Errorf("%s holds raft.db, the raft-boltdb log of an earlier build, which this one does not read: move it away to start this member afresh", dir)
	}
	s, err := logstore.Open(filepath.Join(dir, "log"), logstore.Options{})
	if err != nil {
		return Stores{}, fmt.Errorf("cannot open the raft log in %s: %w", dir, err)
	}
	return Stores{Log: s, Stable: s, Close: s.Close}, nil
}

// Config is a member's setup.
type Config struct {
	ID       string   // this member's client address: its Raft server id
	RaftAddr string   // where the Raft transport listens, and is dialled
	Members  []Member // the voters that bootstrap a new cluster
	Dir      string   // holds the stores and Raft's snapshots
	// HeartbeatTimeout and ElectionTimeout are Raft's; zero: the defaults.
	HeartbeatTimeout, ElectionTimeout time.Duration
	// SnapshotThreshold is how many entries since the last snapshot make
	// the next; zero: Raft's default.
	SnapshotThreshold uint64
	// TrailingLogs is how many entries a snapshot leaves in the log;
	// zero: Raft's default.
	TrailingLogs uint64
	// Stores opens the log and stable stores in Dir; nil: LogStores.
	Stores func(dir string) (Stores, error)
	// Stream carries Raft's traffic; nil: TLS when TLS is set, else
	// plain TCP on RaftAddr.
	Stream raft.StreamLayer
	// TLS, when Stream is nil, runs Raft's traffic over mutual TLS on
	// RaftAddr (tlsstream.go). Its files need a certificate, key and CA.
	TLS *tlsfiles.Loader
	// MaxConns caps the raft connections accepted at once, when Stream
	// is nil; zero: DefaultMaxConns.
	MaxConns int
	Logger   *slog.Logger
}

// App is the replicated state: the main control's core.
type App interface {
	// Apply applies a committed batch at index. It runs on Raft's FSM
	// goroutine, in log order.
	Apply(index uint64, b Batch) error
	// Snapshot captures the state as of the last index applied, and
	// returns what writes it later, on another goroutine. ErrSnapshotLater
	// skips this one.
	Snapshot() (write func(w io.Writer) error, err error)
	// Restore replaces the state with a snapshot's.
	Restore(r io.Reader) error
}

// ErrSnapshotLater from App.Snapshot skips a snapshot without an error
// logged: Raft tries again at its next interval, or when Snapshot is asked.
// It must be Raft's own value, which Raft compares as is.
var ErrSnapshotLater = raft.ErrNothingNewToSnapshot

// Node is a running member.
type Node struct {
	cfg    Config
	log    *slog.Logger
	r      *raft.Raft
	trans  *raft.NetworkTransport
	stores Stores
	snaps  *raft.FileSnapshotStore
}

// raftConfig is Raft's settings for cfg, its timeouts set.
func raftConfig(cfg Config) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	// A leader steps down when no quorum answered within the lease. An
	// idle leader's heartbeats go every tenth to fifth of the heartbeat
	// timeout, so the lease follows that timeout: half of it, 200 ms by
	// default. Raft's own 500 ms would be shorter than one heartbeat
	// round from 5 s on, and the leader would step down while idle.
	rc.LeaderLeaseTimeout = cfg.HeartbeatTimeout / 2
	rc.CommitTimeout = 5 * time.Millisecond
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}
	if cfg.TrailingLogs > 0 {
		rc.TrailingLogs = cfg.TrailingLogs
	}
	rc.Logger = newHCLogger(cfg.Logger)
	rc.NoLegacyTelemetry = true
	return rc
}

// Start opens the stores and starts Raft. A member with no Raft state
// bootstraps cfg.Members, the same list on every member; one with state
// ignores it. Raft restores the newest snapshot into app before Start
// returns, and applies committed entries as it learns of them.
func Start(cfg Config, app App) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HeartbeatTimeout == 0 {
		cfg.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if cfg.ElectionTimeout == 0 {
		cfg.ElectionTimeout = DefaultElectionTimeout
	}
	if cfg.Stores == nil {
		cfg.Stores = LogStores
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot make %s: %w", cfg.Dir, err)
	}
	n := &Node{cfg: cfg, log: cfg.Logger}
	rc := raftConfig(cfg)
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("raft settings: %w", err)
	}
	var err error
	if n.stores, err = cfg.Stores(cfg.Dir); err != nil {
		return nil, err
	}
	if n.snaps, err = raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, rc.Logger); err != nil {
		n.closeStores()
		return nil, fmt.Errorf("cannot open raft snapshots in %s: %w", cfg.Dir, err)
	}
	if err := n.openTransport(rc); err != nil {
		n.closeStores()
		return nil, err
	}
	exists, err := raft.HasExistingState(n.stores.Log, n.stores.Stable, n.snaps)
	if err != nil {
		n.closeAll()
		return nil, fmt.Errorf("cannot read the raft state in %s: %w", cfg.Dir, err)
	}
	if !exists && len(cfg.Members) == 0 {
		// A member that joins: it waits for the leader's cluster_add.
		n.log.Info("no raft state and no members given: waiting to be added to a cluster", "id", cfg.ID)
	}
	if !exists && len(cfg.Members) > 0 {
		var servers []raft.Server
		self := false
		for _, m := range cfg.Members {
			suffrage := raft.Voter
			if !m.Voter {
				suffrage = raft.Nonvoter
			}
			servers = append(servers, raft.Server{ID: raft.ServerID(m.ID), Address: raft.ServerAddress(m.Raft), Suffrage: suffrage})
			self = self || m.ID == cfg.ID
		}
		if !self {
			n.closeAll()
			return nil, fmt.Errorf("--cluster-members does not list this member's id %s (its client address)", cfg.ID)
		}
		if err := raft.BootstrapCluster(rc, n.stores.Log, n.stores.Stable, n.snaps, n.trans,
			raft.Configuration{Servers: servers}); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			n.closeAll()
			return nil, fmt.Errorf("cannot bootstrap the cluster: %w", err)
		}
		n.log.Info("cluster bootstrapped", "members", len(servers))
	}
	n.r, err = raft.NewRaft(rc, &fsm{app: app, log: cfg.Logger}, n.stores.Log, n.stores.Stable, n.snaps, n.trans)
	if err != nil {
		n.closeAll()
		return nil, fmt.Errorf("cannot start raft: %w", err)
	}
	if exists {
		if err := n.checkRenamed(); err != nil {
			_ = n.Close()
			return nil, err
		}
	}
	return n, nil
}

// checkRenamed refuses a member whose raft address the configuration
// holds under another id: it was started under a new --advertise or
// --listen. Raft would refuse its votes for ever, silently.
func (n *Node) checkRenamed() error {
	f := n.r.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("cannot read the raft configuration: %w", err)
	}
	local := string(n.trans.LocalAddr())
	for _, srv := range f.Configuration().Servers {
		if string(srv.ID) == n.cfg.ID {
			return nil
		}
	}
	for _, srv := range f.Configuration().Servers {
		if a := string(srv.Address); a == n.cfg.RaftAddr || a == local {
			return fmt.Errorf("%w: this member's raft state knows it as %s (raft %s), not %s: start it with --advertise %s, or remove %s from the cluster and add it again as %s",
				ErrRenamed, srv.ID, a, n.cfg.ID, srv.ID, srv.ID, n.cfg.ID)
		}
	}
	return nil // not a member yet, or removed: it waits to be added
}

func (n *Node) openTransport(rc *raft.Config) error {
	stream := n.cfg.Stream
	if stream == nil && n.cfg.TLS != nil {
		ts, err := newTLSStreamLayer(n.cfg.RaftAddr, nil, n.cfg.TLS, n.cfg.MaxConns, n.log)
		if err != nil {
			return err
		}
		stream = ts
	}
	if stream == nil {
		tcp, err := newTCPStream(n.cfg.RaftAddr, n.cfg.MaxConns, n.log)
		if err != nil {
			return err
		}
		stream = tcp
	}
	// MaxRPCsInFlight 1 turns off Raft's pipelined replication, which
	// can wedge: once a follower's answer ends a pipeline (a newer term,
	// a refusal), one more send may wait forever on a decoder that waits
	// on a reader that is gone. That follower then gets no entries, and
	// Raft's Shutdown waits forever. Without it the leader sends each
	// follower one AppendEntries at a time, of all the entries waiting.
	n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: stream, MaxPool: maxPool, MaxRPCsInFlight: 1, Timeout: 10 * time.Second, Logger: rc.Logger})
	return nil
}

func (n *Node) closeStores() {
	if n.stores.Close != nil {
		if err := n.stores.Close(); err != nil {
			n.log.Warn("cannot close the raft log", "err", err)
		}
	}
}

func (n *Node) closeAll() {
	if n.trans != nil {
		_ = n.trans.Close()
	}
	n.closeStores()
}

// Close stops Raft, then its transport and stores.
func (n *Node) Close() error {
	err := n.r.Shutdown().Error()
	n.closeAll()
	return err
}

// Raft is the running Raft, for a Proposer.
func (n *Node) Raft() *raft.Raft { return n.r }

// ID is this member's id.
func (n *Node) ID() string { return n.cfg.ID }

// LeaderCh tells of each leadership gained (true) or lost (false). A
// receiver that is slow may miss changes in between (raft.LeaderCh).
func (n *Node) LeaderCh() <-chan bool { return n.r.LeaderCh() }

// Barrier waits until every entry committed before it is applied.
func (n *Node) Barrier(timeout time.Duration) error { return n.r.Barrier(timeout).Error() }

// Term is the current Raft term.
func (n *Node) Term() uint64 { return n.r.CurrentTerm() }

// Leader is the leader's id, or "" when not known.
func (n *Node) Leader() string {
	_, id := n.r.LeaderWithID()
	return string(id)
}

// IsLeader reports whether this member is the leader now.
func (n *Node) IsLeader() bool { return n.r.State() == raft.Leader }
