package core

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// Defaults of spec sections 1 to 5.
const (
	DefaultHandshakeTimeout = 5 * time.Second
	DefaultHeartbeatTimeout = 15 * time.Second
	DefaultStartTimeout     = 5 * time.Second
	DefaultMaxPending       = 1_000_000
	DefaultRetention        = 24 * time.Hour
	DefaultRetentionMax     = 100_000
	DefaultMaxRetrying      = 10_000
	DefaultMaxAttempts      = 3
	DefaultRetryBase        = time.Second
	DefaultRetryCap         = 60 * time.Second
	MinMaxFrame             = 1024
)

// DefaultMaxWaits caps the waits for done replies over all connections.
// At about 260 bytes each (WaitCost), 262,144 hold about 72 MiB.
const DefaultMaxWaits = 1 << 18

// Schedule caps (protocol section 8.12). Every snapshot holds all
// schedules, and at the defaults they take about 4 MiB.
const (
	DefaultMaxSchedules     = 256
	DefaultMaxScheduleBytes = 16 << 10
)

// Defaults of what registrations may make the core hold (kept.go).
const (
	// DefaultMaxKeptExecutors costs 2 MiB, at KeptExecutorCost each.
	DefaultMaxKeptExecutors = 4096
	// DefaultMaxTaskTypes costs 18 MiB, at TaskTypeCost each.
	DefaultMaxTaskTypes = 16_384
)

// Config holds the core's settings. Zero values mean the spec's defaults.
type Config struct {
	Version           string        // announced as server=apollo11/<Version>
	MaxFrame          int           // max payload; announced in welcome
	Token             []byte        // shared token; nil means auth=none
	AdminToken        []byte        // admin messages' token (section 8.2); nil: none needed
	HandshakeTimeout  time.Duration // register/hello must arrive within it
	HeartbeatInterval time.Duration // default HeartbeatTimeout/3
	HeartbeatTimeout  time.Duration // executor silence before it is lost
	StartTimeout      time.Duration // dispatched but not started
	MaxPending        int           // non-terminal tasks before queue_full
	Retention         time.Duration // how long terminal tasks are kept
	RetentionMax      int           // how many terminal tasks are kept
	// MaxRetrying caps the retrying tasks whose backoff runs at once. More
	// wait their turn in retrying, so a failing downstream cannot cause a
	// retry storm. Negative means no cap.
	MaxRetrying int
	RetryBase   time.Duration // first retry delay, default 1 s
	RetryCap    time.Duration // longest retry delay, default 60 s
	// MaxStateBytes caps the shared state's size (see stateEntryBytes).
	// Results whose state changes would grow it past the cap are refused.
	// Zero means DefaultMaxStateBytes, negative no cap.
	MaxStateBytes int
	// MaxPendingBytes caps the bytes held by tasks not yet ended (see
	// heldBytes). A submit that would take them past it gets queue_full.
	// Zero means DefaultMaxPendingBytes, negative no cap.
	MaxPendingBytes int
	// RetentionMaxBytes caps the bytes held by the ended tasks kept (see
	// heldBytes). Past it the oldest ended are forgotten, as past
	// RetentionMax. Zero means DefaultRetentionMaxBytes, negative no cap.
	RetentionMaxBytes int
	// MaxWaits caps the wait=true submits waiting for their done over all
	// connections. Past it such a submit gets unavailable. Zero means
	// DefaultMaxWaits.
	MaxWaits int
	// MaxSchedules caps the schedules kept (protocol section 8.12). Zero
	// means DefaultMaxSchedules.
	MaxSchedules int
	// MaxScheduleBytes caps one schedule's name, expression, zone and
	// body. Zero means DefaultMaxScheduleBytes.
	MaxScheduleBytes int
	// Zone loads a schedule's time zone by its IANA name. nil means
	// time.LoadLocation. A test may pass its own to stay off the disk.
	Zone func(name string) (*time.Location, error)
	// MaxPendingPerConn caps one connection's tasks not yet ended
	// (connquota.go). Past it its submits get queue_full. Zero means no
	// cap but MaxPending.
	MaxPendingPerConn int
	// MaxKeptExecutors caps the disconnected executors kept (kept.go).
	// Zero means DefaultMaxKeptExecutors.
	MaxKeptExecutors int
	// MaxTaskTypes caps the task type names known, by tasks and
	// registrations together (kept.go). Zero means DefaultMaxTaskTypes.
	MaxTaskTypes int
	// MaxRuns and MaxRunBytes cap the runs kept and the bytes they hold
	// (protocol section 8.10). Zero means DefaultMaxRuns and
	// DefaultMaxRunBytes.
	MaxRuns     int
	MaxRunBytes int

	Observer Observer // metrics; nil: none

	// Cluster makes this main control a cluster member (protocol 8.13):
	// it serves only while SetRole says it leads. nil: a single main
	// control, which does not speak the cluster group.
	Cluster Cluster

	// Unlogged says nothing keeps the change log, as in a main control
	// without a data dir. Changes are still checked and applied, but not
	// encoded, and Effects.Record is not called. Encoding them would cost a
	// tenth of the core's CPU for nothing.
	Unlogged bool

	Clock  Clock
	Rand   *rand.Rand    // retry jitter; nil: seeded randomly
	Nonce  func() string // welcome nonces; nil: crypto random
	Logger *slog.Logger  // nil: slog.Default()
}

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("invalid configuration")

// withDefaults fills zero values and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.MaxFrame == 0 {
		c.MaxFrame = wire.DefaultMaxFrame
	}
	if c.MaxFrame < MinMaxFrame || c.MaxFrame > 1<<31-1 {
		return c, fmt.Errorf("%w: max frame %d outside %d..%d", ErrConfig, c.MaxFrame, MinMaxFrame, 1<<31-1)
	}
	if c.Token != nil && len(c.Token) == 0 {
		return c, fmt.Errorf("%w: empty token", ErrConfig)
	}
	if c.AdminToken != nil && len(c.AdminToken) == 0 {
		return c, fmt.Errorf("%w: empty admin token", ErrConfig)
	}
	if c.AdminToken != nil && bytes.Equal(c.AdminToken, c.Token) {
		// Every peer holding the shared token would then be an admin.
		return c, fmt.Errorf("%w: the admin token is the shared token: give the admin a token of its own", ErrConfig)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	def(&c.HeartbeatTimeout, DefaultHeartbeatTimeout)
	def(&c.HeartbeatInterval, c.HeartbeatTimeout/3)
	def(&c.StartTimeout, DefaultStartTimeout)
	def(&c.Retention, DefaultRetention)
	def(&c.RetryBase, DefaultRetryBase)
	def(&c.RetryCap, DefaultRetryCap)
	if c.HeartbeatInterval > c.HeartbeatTimeout/2 {
		return c, fmt.Errorf("%w: heartbeat interval %v is above half of the heartbeat timeout %v",
			ErrConfig, c.HeartbeatInterval, c.HeartbeatTimeout)
	}
	if c.HeartbeatInterval < time.Millisecond {
		return c, fmt.Errorf("%w: heartbeat interval %v below 1ms", ErrConfig, c.HeartbeatInterval)
	}
	for name, d := range map[string]time.Duration{"handshake timeout": c.HandshakeTimeout,
		"start timeout": c.StartTimeout, "retention": c.Retention, "retry base": c.RetryBase, "retry cap": c.RetryCap} {
		if d < 0 {
			return c, fmt.Errorf("%w: negative %s", ErrConfig, name)
		}
	}
	if c.MaxPending == 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.RetentionMax == 0 {
		c.RetentionMax = DefaultRetentionMax
	}
	if c.MaxWaits == 0 {
		c.MaxWaits = DefaultMaxWaits
	}
	if c.MaxSchedules == 0 {
		c.MaxSchedules = DefaultMaxSchedules
	}
	if c.MaxScheduleBytes == 0 {
		c.MaxScheduleBytes = DefaultMaxScheduleBytes
	}
	if c.MaxKeptExecutors == 0 {
		c.MaxKeptExecutors = DefaultMaxKeptExecutors
	}
	if c.MaxTaskTypes == 0 {
		c.MaxTaskTypes = DefaultMaxTaskTypes
	}
	if c.MaxRuns == 0 {
		c.MaxRuns = DefaultMaxRuns
	}
	if c.MaxRunBytes == 0 {
		c.MaxRunBytes = DefaultMaxRunBytes
	}
	if c.MaxPending < 0 || c.RetentionMax < 0 || c.MaxWaits < 0 || c.MaxSchedules < 0 || c.MaxScheduleBytes < 0 ||
		c.MaxPendingPerConn < 0 || c.MaxKeptExecutors < 0 || c.MaxTaskTypes < 0 || c.MaxRuns < 0 || c.MaxRunBytes < 0 {
		return c, fmt.Errorf("%w: negative limit", ErrConfig)
	}
	if c.MaxRetrying == 0 {
		c.MaxRetrying = DefaultMaxRetrying
	}
	if c.MaxStateBytes == 0 {
		c.MaxStateBytes = DefaultMaxStateBytes
	}
	if c.MaxPendingBytes == 0 {
		c.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if c.RetentionMaxBytes == 0 {
		c.RetentionMaxBytes = DefaultRetentionMaxBytes
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Zone == nil {
		c.Zone = time.LoadLocation
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
