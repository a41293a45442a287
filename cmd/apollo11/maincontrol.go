package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"time"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/snapshot"
	"github.com/apollo11/apollo11/systemd"
)

// maincontrolFlags are the main control's settings as flags.
type maincontrolFlags struct {
	listen, dataDir, tokenFile, adminTokenFile, fsync         string
	handshakeTimeout, heartbeatInterval, heartbeatTimeout     time.Duration
	startTimeout, retention, fsyncInterval, snapshotInterval  time.Duration
	maxPending, maxInflight, maxFrame, maxConns, retentionMax int
	maxRetrying, snapshotEvery, eventLoops, maxStateBytes     int
	maxPendingBytes, retentionMaxBytes, maxWaits, maxBuffers  int
	maxRuns, maxRunBytes                                      int
	maxUnauthConns                                            int
	maxSchedules, maxScheduleBytes                            int
	maxPendingPerConn, maxKeptExecs, maxTypes                 int
	recoverTruncate, lockLoops                                bool
	snapshotDuty                                              float64
	httpListen                                                string
	policyFile                                                string
	tlsCert, tlsKey, tlsClientCA                              string
	raftTLSCert, raftTLSKey, raftTLSCA                        string
	retryBase, retryCap                                       time.Duration
	raftListen, clusterMembers, advertise                     string
	raftHeartbeat, raftElection                               time.Duration
	log                                                       logFlags
}

func (f *maincontrolFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "listen", maincontrol.DefaultListen, "address to listen on (host:port); loopback unless told otherwise")
	fs.StringVar(&f.dataDir, "data-dir", "apollo-data", `data directory for the log and snapshots; "" keeps state in memory only`)
	fs.StringVar(&f.tokenFile, "token-file", "", "shared token file: turns on HMAC-SHA256 auth")
	fs.StringVar(&f.adminTokenFile, "admin-token-file", "", "admin token file: requeue, pause, bulk cancel and purge, state repair need a client that proves it (else the shared token is enough)")
	durationVar(fs, &f.handshakeTimeout, "handshake-timeout", core.DefaultHandshakeTimeout, "time a new connection has to register or say hello")
	durationVar(fs, &f.heartbeatInterval, "heartbeat-interval", 0, "executor heartbeat interval (default a third of --heartbeat-timeout)")
	durationVar(fs, &f.heartbeatTimeout, "heartbeat-timeout", core.DefaultHeartbeatTimeout, "executor silence after which it is lost")
	durationVar(fs, &f.startTimeout, "start-timeout", core.DefaultStartTimeout, "time a dispatched task has to start")
	fs.IntVar(&f.maxPending, "max-pending", core.DefaultMaxPending, "tasks not yet ended before submit gets queue_full")
	fs.IntVar(&f.maxPendingBytes, "max-pending-bytes", core.DefaultMaxPendingBytes, "bytes tasks not yet ended may hold (args, type name, key, trace_id, 48 per depends_on id, a failed attempt's outputs and error) before submit gets queue_full (-1: no cap)")
	fs.IntVar(&f.maxPendingPerConn, "max-pending-per-conn", 0, "tasks not yet ended one connection may have submitted before its submits get queue_full; a closed connection's tasks count against --max-pending only (0: no cap but --max-pending)")
	fs.IntVar(&f.maxTypes, "max-task-types", core.DefaultMaxTaskTypes, "distinct task type names known, by tasks and registrations; past it a submit of a new type gets queue_full and a register naming one unavailable")
	fs.IntVar(&f.maxKeptExecs, "max-kept-executors", core.DefaultMaxKeptExecutors, "disconnected executors kept until their heartbeat timeout; past it the idle one gone longest is forgotten, and if all hold tasks a register of a new id gets unavailable")
	fs.IntVar(&f.maxWaits, "max-waits", core.DefaultMaxWaits, "wait=true submits waiting for their done over all connections (each connection at most 65,536) before such a submit gets unavailable")
	fs.IntVar(&f.maxSchedules, "max-schedules", core.DefaultMaxSchedules, "cron schedules kept (docs/protocol.md 8.12); past it schedule_add gets bad_request")
	fs.IntVar(&f.maxScheduleBytes, "max-schedule-bytes", core.DefaultMaxScheduleBytes, "bytes one schedule may hold: its name, cron expression, zone, and body keys and values (each key 32 more)")
	fs.IntVar(&f.maxRuns, "max-runs", core.DefaultMaxRuns, "runs kept (protocol 8.10); past it the oldest ended are forgotten, and a run_submit while that many have not ended gets queue_full")
	fs.IntVar(&f.maxRunBytes, "max-run-bytes", core.DefaultMaxRunBytes, "bytes the runs kept may hold (names, keys, step ids, arg templates); past it the oldest ended are forgotten, and a run_submit gets queue_full while the runs not ended hold it")
	fs.IntVar(&f.maxInflight, "max-inflight", maincontrol.DefaultMaxInflight, "replies awaiting disk per connection before it is read no more")
	fs.IntVar(&f.maxFrame, "max-frame", 1<<20, "largest frame payload in bytes")
	fs.IntVar(&f.maxConns, "max-conns", maincontrol.DefaultMaxConns, "most connections at once")
	fs.IntVar(&f.maxUnauthConns, "max-unauth-conns", maincontrol.DefaultMaxUnauthConns, "most connections at once not yet through their handshake (hello or register); past it, or at --max-conns, a newcomer closes the oldest of them")
	fs.IntVar(&f.maxBuffers, "max-buffers", 0, "bytes all connections' buffers may hold together: two fifths unsent output, two fifths input held while paused, one fifth incomplete frames (0: each its own default, 320 MiB in all at the default --max-frame)")
	durationVar(fs, &f.retention, "retention", core.DefaultRetention, "how long ended tasks are kept")
	fs.IntVar(&f.retentionMax, "retention-max", core.DefaultRetentionMax, "how many ended tasks are kept (newest)")
	fs.IntVar(&f.retentionMaxBytes, "retention-max-bytes", core.DefaultRetentionMaxBytes, "bytes the ended tasks kept may hold, counted as for --max-pending-bytes with their outputs and error; past it the oldest ended are forgotten (-1: no cap)")
	fs.IntVar(&f.maxRetrying, "max-retrying", core.DefaultMaxRetrying, "retrying tasks whose backoff runs at once; more wait their turn (-1: no cap)")
	durationVar(fs, &f.retryBase, "retry-base", core.DefaultRetryBase, "first retry delay: attempt n waits min(--retry-cap, base x 2^(n-1)) x a random 0.5-1 (a type's policy may say otherwise)")
	durationVar(fs, &f.retryCap, "retry-cap", core.DefaultRetryCap, "longest retry delay, before the random factor")
	fs.StringVar(&f.policyFile, "policy-file", "", "YAML file of per-type policies (defaults, retry, limits, stuck tasks; docs/protocol.md 8.9), read at start; maincontrol reads it again on SIGHUP, which then reloads rather than stops")
	fs.IntVar(&f.maxStateBytes, "max-state-bytes", core.DefaultMaxStateBytes, "largest shared state in bytes, each key counted as name + value (at least 20) + 64; results that would grow it past this fail (-1: no cap)")
	fs.StringVar(&f.fsync, "fsync", "always", "when the log is fsynced: always, batch or never")
	durationVar(fs, &f.fsyncInterval, "fsync-interval", snapshot.DefaultFsyncInterval, "longest wait between fsyncs with --fsync batch")
	fs.IntVar(&f.snapshotEvery, "snapshot-every", maincontrol.DefaultSnapshotEvery, "log records between snapshots")
	durationVar(fs, &f.snapshotInterval, "snapshot-interval", maincontrol.DefaultSnapshotInterval, "longest time between a change and the snapshot that holds it")
	fs.Float64Var(&f.snapshotDuty, "snapshot-duty", maincontrol.DefaultSnapshotDuty, "share of one core a snapshot written in the background may use, 0.05 to 1: it pauses as it writes and rests once written; lower spares a busy small host CPU, 1 writes them back to back (less log to replay after a crash)")
	fs.BoolVar(&f.recoverTruncate, "recover-truncate", false, "on corruption in the middle of the log, start anyway: skip it if a snapshot holds the records it drops, else cut the log there (later records are lost)")
	fs.IntVar(&f.eventLoops, "event-loops", 1, "gnet event loops, 1 to 256")
	fs.BoolVar(&f.lockLoops, "lock-loops", true, "keep each event loop on one OS thread: a shorter latency tail where the host moves busy threads between cores, for more CPU at low rates (false: 30% less at 5,000 tasks/s)")
	fs.StringVar(&f.httpListen, "http-listen", "", "address for Prometheus /metrics, /healthz and the web dashboard (off when empty)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "certificate chain (PEM) of the main port: clients and executors then connect over TLS (plaintext when empty); the TLS files are read again on SIGHUP, which then reloads rather than stops")
	fs.StringVar(&f.tlsKey, "tls-key", "", "private key (PEM) of --tls-cert")
	fs.StringVar(&f.tlsClientCA, "tls-client-ca", "", "CA bundle (PEM): every client and executor must show a certificate it signed (mutual TLS; needs --tls-cert)")
	fs.StringVar(&f.raftTLSCert, "raft-tls-cert", "", "cluster mode: this member's certificate (PEM) for Raft's traffic, which then runs over mutual TLS; needs --raft-tls-key and --raft-tls-ca; read again on SIGHUP")
	fs.StringVar(&f.raftTLSKey, "raft-tls-key", "", "cluster mode: private key (PEM) of --raft-tls-cert")
	fs.StringVar(&f.raftTLSCA, "raft-tls-ca", "", "cluster mode: CA bundle (PEM) every member's Raft certificate must come from")
	fs.StringVar(&f.raftListen, "raft-listen", "", "cluster mode: Raft's address (host:port); this member's id is its --advertise or --listen, the address clients dial (docs/protocol.md 8.13)")
	fs.StringVar(&f.advertise, "advertise", "", "cluster mode: the address (host:port) clients dial to reach this member, and so its id; default --listen, which may then be on all interfaces")
	fs.StringVar(&f.clusterMembers, "cluster-members", "", "the voters that bootstrap a new cluster, the same on every member: ID=RAFTADDR,... where ID is a member's --advertise or --listen (ignored once the member has Raft state)")
	durationVar(fs, &f.raftHeartbeat, "raft-heartbeat-timeout", cluster.DefaultHeartbeatTimeout, "cluster mode: a follower with no word from the leader this long (to twice it) calls an election")
	durationVar(fs, &f.raftElection, "raft-election-timeout", cluster.DefaultElectionTimeout, "cluster mode: a candidate without a majority this long (to twice it) starts the election again; at least --raft-heartbeat-timeout")
	f.log.register(fs)
}

// checkPositive refuses zero and negative limits and times (see
// positive). --heartbeat-interval 0 keeps its documented meaning.
func (f *maincontrolFlags) checkPositive() error {
	if f.eventLoops > maincontrol.MaxEventLoops {
		return fmt.Errorf("--event-loops %d: want 1 to %d (gnet runs at most %d)", f.eventLoops, maincontrol.MaxEventLoops, maincontrol.MaxEventLoops)
	}
	if f.heartbeatInterval < 0 || f.heartbeatInterval > 0 && f.heartbeatInterval < time.Millisecond {
		// 0 keeps its documented meaning (a third of the timeout).
		return fmt.Errorf("--heartbeat-interval %v: %w", f.heartbeatInterval, errBelowMs)
	}
	if f.maxRetrying == 0 || f.maxRetrying < -1 {
		return fmt.Errorf("--max-retrying %d: want -1 (no cap) or more than 0", f.maxRetrying)
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"max-state-bytes", f.maxStateBytes}, {"max-pending-bytes", f.maxPendingBytes}, {"retention-max-bytes", f.retentionMaxBytes}} {
		if c.v == 0 || c.v < -1 {
			return fmt.Errorf("--%s %d: want -1 (no cap) or more than 0", c.name, c.v)
		}
	}
	if f.maxPendingPerConn < 0 {
		return fmt.Errorf("--max-pending-per-conn %d: want 0 (no cap but --max-pending) or more", f.maxPendingPerConn)
	}
	if err := maincontrol.CheckSnapshotDuty(f.snapshotDuty); err != nil {
		return fmt.Errorf("--snapshot-duty %v: %w", f.snapshotDuty, err)
	}
	if f.maxBuffers < 0 {
		return fmt.Errorf("--max-buffers %d: want 0 (the default) or more", f.maxBuffers)
	}
	return firstErr(
		positive("max-pending", f.maxPending), positive("max-inflight", f.maxInflight),
		positive("max-frame", f.maxFrame), positive("max-conns", f.maxConns), positive("max-unauth-conns", f.maxUnauthConns),
		positive("retention-max", f.retentionMax), positive("snapshot-every", f.snapshotEvery),
		positive("event-loops", f.eventLoops), positive("max-waits", f.maxWaits),
		positive("max-schedules", f.maxSchedules), positive("max-schedule-bytes", f.maxScheduleBytes),
		positive("max-task-types", f.maxTypes), positive("max-kept-executors", f.maxKeptExecs),
		positive("max-runs", f.maxRuns), positive("max-run-bytes", f.maxRunBytes),
		positiveMs("handshake-timeout", f.handshakeTimeout), positiveMs("heartbeat-timeout", f.heartbeatTimeout),
		positiveMs("start-timeout", f.startTimeout), positiveMs("retention", f.retention),
		positiveMs("fsync-interval", f.fsyncInterval), positiveMs("snapshot-interval", f.snapshotInterval),
		positiveMs("retry-base", f.retryBase), positiveMs("retry-cap", f.retryCap), retryOrder(f.retryBase, f.retryCap))
}

// config turns the flags into a maincontrol.Config whose logger writes
// to logTo.
func (f *maincontrolFlags) config(logTo io.Writer) (maincontrol.Config, error) {
	var cfg maincontrol.Config
	if err := firstErr(checkListenFlag(f.listen), f.checkPositive()); err != nil {
		return cfg, usageError(err)
	}
	logger, err := f.log.logger(logTo)
	if err != nil {
		return cfg, usageError(err)
	}
	mode, err := snapshot.ParseFsyncMode(strings.ToLower(f.fsync)) // any case, as --log-level
	if err != nil {
		return cfg, usageError(fmt.Errorf("--fsync: %w", err))
	}
	if f.tlsClientCA != "" && f.tlsCert == "" {
		return cfg, usageError(errors.New("--tls-client-ca needs --tls-cert and --tls-key: the main port must speak TLS to ask for client certificates"))
	}
	var token []byte
	if f.tokenFile != "" {
		if token, err = auth.LoadToken(f.tokenFile); err != nil {
			return cfg, err
		}
		warnToken(logger, f.tokenFile, token)
	}
	var adminToken []byte
	if f.adminTokenFile != "" {
		if adminToken, err = auth.LoadToken(f.adminTokenFile); err != nil {
			return cfg, fmt.Errorf("--admin-token-file: %w", err)
		}
		warnToken(logger, f.adminTokenFile, adminToken)
	}
	var members []cluster.Member
	if f.clusterMembers != "" {
		if f.raftListen == "" {
			return cfg, usageError(errors.New("--cluster-members needs --raft-listen (cluster mode)"))
		}
		if members, err = cluster.ParseMembers(f.clusterMembers); err != nil {
			return cfg, usageError(fmt.Errorf("--cluster-members: %w", err))
		}
	}
	raftTLS := tlsfiles.Files{Cert: f.raftTLSCert, Key: f.raftTLSKey, CA: f.raftTLSCA}
	if !raftTLS.Empty() && (f.raftListen == "" || raftTLS.Cert == "" || raftTLS.Key == "" || raftTLS.CA == "") {
		return cfg, usageError(errors.New("--raft-tls-cert, --raft-tls-key and --raft-tls-ca go together, with --raft-listen: Raft over TLS is mutual"))
	}
	if f.raftListen != "" {
		if err := firstErr(positiveMs("raft-heartbeat-timeout", f.raftHeartbeat), positiveMs("raft-election-timeout", f.raftElection)); err != nil {
			return cfg, usageError(err)
		}
		if f.raftElection < f.raftHeartbeat {
			return cfg, usageError(fmt.Errorf("--raft-election-timeout %v is below --raft-heartbeat-timeout %v", f.raftElection, f.raftHeartbeat))
		}
	}
	cfg = maincontrol.Config{
		RaftListen: f.raftListen, Advertise: f.advertise, ClusterMembers: members, RaftTLS: raftTLS,
		RaftHeartbeatTimeout: f.raftHeartbeat, RaftElectionTimeout: f.raftElection,
		Listen: f.listen, DataDir: f.dataDir, Fsync: mode, FsyncInterval: f.fsyncInterval,
		SnapshotEvery: f.snapshotEvery, SnapshotInterval: f.snapshotInterval, SnapshotDuty: f.snapshotDuty, RecoverTruncate: f.recoverTruncate,
		MaxConns: f.maxConns, MaxUnauthConns: f.maxUnauthConns, MaxBuffers: f.maxBuffers, MaxInflight: f.maxInflight, EventLoops: f.eventLoops, UnlockLoops: !f.lockLoops, Logger: logger,
		HTTPListen: f.httpListen, PolicyFile: f.policyFile,
		TLS: tlsfiles.Files{Cert: f.tlsCert, Key: f.tlsKey, CA: f.tlsClientCA},
		Core: core.Config{
			Version: version, MaxFrame: f.maxFrame, Token: token, AdminToken: adminToken,
			HandshakeTimeout: f.handshakeTimeout, HeartbeatInterval: f.heartbeatInterval,
			HeartbeatTimeout: f.heartbeatTimeout, StartTimeout: f.startTimeout,
			MaxPending: f.maxPending, Retention: f.retention, RetentionMax: f.retentionMax,
			MaxRetrying: f.maxRetrying, MaxStateBytes: f.maxStateBytes, MaxPendingBytes: f.maxPendingBytes,
			RetentionMaxBytes: f.retentionMaxBytes, MaxWaits: f.maxWaits, MaxPendingPerConn: f.maxPendingPerConn,
			MaxKeptExecutors: f.maxKeptExecs, MaxTaskTypes: f.maxTypes, Logger: logger,
			MaxRuns: f.maxRuns, MaxRunBytes: f.maxRunBytes,
			RetryBase: f.retryBase, RetryCap: f.retryCap,
			MaxSchedules: f.maxSchedules, MaxScheduleBytes: f.maxScheduleBytes,
		},
	}
	return cfg, nil
}

func runMaincontrol(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("maincontrol", "maincontrol [flags]", stdout)
	var f maincontrolFlags
	f.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	sink := f.log.daemonSink(stderr)
	defer closeSink(sink)
	cfg, err := f.config(sink)
	if err != nil {
		return err
	}
	cfg.LogDropped = sink.Dropped
	notifier := systemd.FromEnv()
	sigs := stopSignals()
	if cfg.PolicyFile != "" || !cfg.TLS.Empty() || !cfg.RaftTLS.Empty() {
		var stopReload func()
		sigs, cfg.Reload, stopReload = reloadOnHangup()
		defer stopReload()
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	// An idle snapshot maps pages of the binary that idling never uses.
	// They go at once, not at the next minute's release.
	released := make(chan struct{}, 1)
	cfg.OnIdleSnapshot = func() {
		select {
		case released <- struct{}{}:
		default:
		}
	}
	cfg.OnReady = func(string) {
		logNotifyErr(cfg, notifier.Ready())
		go keepFootprint(ctx, cfg.Logger, released)
	}
	cfg.OnTick = func() { logNotifyErr(cfg, notifier.Watchdog(time.Now())) }
	if w := notifier.WatchdogInterval(); w > 0 {
		// The pings ride on the ticks. An idle main control must tick
		// well within the interval systemd waits for one.
		cfg.IdleTick = min(maincontrol.DefaultIdleTick, w/2)
	}
	cfg.OnStopping = func() { logNotifyErr(cfg, notifier.Stopping()) }
	err = maincontrol.Run(ctx, cfg)
	if badSettings(err) {
		return usageError(err)
	}
	if _, ok := errors.AsType[*snapshot.CorruptError](err); ok {
		return fmt.Errorf("%w\n(--recover-truncate starts anyway: if a snapshot holds the records around the damage it skips them and loses nothing, "+
			"otherwise it cuts the log there and every later record is lost; `apollo11 inspect --data-dir %q` tells which; back up the data dir first)", err, f.dataDir)
	}
	if errors.Is(err, snapshot.ErrMissingLog) {
		return fmt.Errorf("%w\n(--recover-truncate starts anyway from the older snapshot and the log it can replay: these records are lost and their task ids skipped; "+
			"`apollo11 inspect --data-dir %q` tells what it would load; back up the data dir first)", err, f.dataDir)
	}
	return err
}

// badSettings reports whether a daemon refused its settings. Those are
// values the flags parse but the daemon cannot work with, such as a
// heartbeat interval above half the timeout. Like a flag that does not
// parse, that is a bad command line.
func badSettings(err error) bool {
	return errors.Is(err, maincontrol.ErrConfig) || errors.Is(err, core.ErrConfig) || errors.Is(err, executor.ErrConfig)
}

func logNotifyErr(cfg maincontrol.Config, err error) {
	if err != nil {
		cfg.Logger.Warn("systemd notification failed", "err", err)
	}
}
