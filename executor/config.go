package executor

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/apollo11/apollo11/wire"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultAddr         = "127.0.0.1:1969"
	DefaultSlots        = 1
	DefaultDrainTimeout = 30 * time.Second
	DefaultBackoffMin   = 500 * time.Millisecond
	DefaultBackoffMax   = 30 * time.Second
	DefaultDialTimeout  = 5 * time.Second

	// MaxSlots is the largest slot count the protocol allows.
	MaxSlots = 65536
	// MaxIDLen is the longest executor id the protocol allows.
	MaxIDLen = 128
)

// Config configures an Executor. Zero fields take the defaults above.
type Config struct {
	// Addr is the main control's host:port.
	Addr string
	// Addrs are more addresses of the same main control: the members of
	// a cluster, tried after Addr. The executor registers with the
	// leader. It follows a follower's not_leader hint only to an address
	// of Addr and Addrs (protocol section 8.13), so no server can steer
	// it, and its tasks, elsewhere.
	Addrs []string
	// ID is the executor_id, required, of 1-128 bytes of A-Z a-z 0-9 _ . : -
	// It must be unique among the executors connected to one main control.
	ID string
	// Handlers maps each task type to its handler. The registered
	// task_types are its keys, sorted. At least one is required. A task type
	// is non-empty valid UTF-8 without commas or spaces (list syntax).
	Handlers map[string]Handler
	// Slots is how many handlers may run at once, 1 to 65536. A connection
	// registers, and runs, fewer when a heartbeat listing that many running
	// tasks could exceed the main control's max_frame. That limit is about
	// max_frame/42 (24,965 at the default 1 MiB, 23 at 1,024). It warns then.
	Slots int
	// Token is the shared secret (see auth.LoadToken). nil means the
	// executor signs nothing, which only a main control with auth=none
	// accepts.
	Token []byte
	// DrainTimeout bounds the graceful stop. It is how long running
	// handlers may go on, and their results wait for acknowledgement,
	// once Run's context is cancelled.
	DrainTimeout time.Duration
	// BackoffMin and BackoffMax set the reconnect delay. Its upper end d
	// doubles from BackoffMin after each failed attempt, up to BackoffMax.
	// Each delay is drawn at random from [d/2, d], so the first may be as
	// short as BackoffMin/2. It resets after a connection that stayed
	// registered for 10 s, or for the cap on d if shorter. Once registered,
	// d also stays under half the main control's timeout_ms. So an executor
	// is back within the time a restarted main control waits for it to list
	// its tasks.
	BackoffMin, BackoffMax time.Duration
	// DialTimeout bounds the TCP dial and each handshake step (welcome,
	// registered).
	DialTimeout time.Duration
	// Dial opens the connection to Addr. nil means TCP, bounded by
	// DialTimeout. It is a seam for tests, Unix sockets or TLS.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// TLS, when set, runs each connection over TLS, after Dial. Without
	// ServerName the host of Addr is verified. DialTimeout bounds the
	// dial and the TLS handshake together.
	TLS *tls.Config
	// Logger receives the executor's structured logs. nil means
	// slog.Default().
	Logger *slog.Logger
}

// ErrConfig is matched (errors.Is) by every configuration error from New.
var ErrConfig = errors.New("invalid executor config")

func configErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
}

// withDefaults returns cfg with zero fields defaulted, or an error naming
// the first invalid field.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Addr == "" && len(cfg.Addrs) == 0 {
		cfg.Addr = DefaultAddr
	}
	cfg.Addrs = slices.Clone(cfg.Addrs) // the caller may reuse its slice
	if cfg.Dial == nil {
		for _, a := range append([]string{cfg.Addr}, cfg.Addrs...) {
			if a == "" && cfg.Addr == "" {
				continue
			}
			if err := wire.CheckDialAddr(a); err != nil {
				return cfg, configErr("address %q: %v", a, err)
			}
		}
	}
	if !validID(cfg.ID) {
		return cfg, configErr("ID %q: want 1-%d bytes of A-Z a-z 0-9 _ . : -", cfg.ID, MaxIDLen)
	}
	if len(cfg.Handlers) == 0 {
		return cfg, configErr("no handlers")
	}
	if len(cfg.Handlers) > wire.MaxExecutorTypes {
		return cfg, configErr("%d task types: a main control takes at most %d from one executor", len(cfg.Handlers), wire.MaxExecutorTypes)
	}
	cfg.Handlers = maps.Clone(cfg.Handlers) // the caller may reuse its map
	for typ, h := range cfg.Handlers {
		if !validTaskType(typ) {
			return cfg, configErr("task type %q: want non-empty UTF-8 without commas, spaces or control characters", typ)
		}
		if h == nil {
			return cfg, configErr("task type %q: nil handler", typ)
		}
	}
	if cfg.Slots == 0 {
		cfg.Slots = DefaultSlots
	}
	if cfg.Slots < 1 || cfg.Slots > MaxSlots {
		return cfg, configErr("Slots %d: want 1 to %d", cfg.Slots, MaxSlots)
	}
	if cfg.Token != nil && len(cfg.Token) == 0 {
		return cfg, configErr("Token is empty (use nil for no auth)")
	}
	cfg.DrainTimeout = orDefault(cfg.DrainTimeout, DefaultDrainTimeout)
	cfg.BackoffMin = orDefault(cfg.BackoffMin, DefaultBackoffMin)
	cfg.BackoffMax = orDefault(cfg.BackoffMax, DefaultBackoffMax)
	cfg.DialTimeout = orDefault(cfg.DialTimeout, DefaultDialTimeout)
	if cfg.DrainTimeout < 0 || cfg.BackoffMin < 0 || cfg.DialTimeout < 0 {
		return cfg, configErr("negative duration")
	}
	if cfg.BackoffMax < cfg.BackoffMin {
		return cfg, configErr("BackoffMax %v is below BackoffMin %v", cfg.BackoffMax, cfg.BackoffMin)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg, nil
}

// taskTypes returns the handler keys, sorted.
func (cfg Config) taskTypes() []string {
	types := make([]string, 0, len(cfg.Handlers))
	for t := range cfg.Handlers {
		types = append(types, t)
	}
	sort.Strings(types)
	return types
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func validID(id string) bool {
	if len(id) == 0 || len(id) > MaxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '_', c == '.', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

func validTaskType(t string) bool {
	return t != "" && utf8.ValidString(t) && !strings.ContainsAny(t, ", ") &&
		!strings.ContainsFunc(t, unicode.IsControl)
}
