package snapshot

import (
	"fmt"
	"log/slog"
	"time"
)

// FsyncMode says when appended records are fsynced and confirmed
// (spec section 7, --fsync).
type FsyncMode int

const (
	// FsyncAlways fsyncs as soon as possible, with group commit.
	// Records that arrive while an fsync runs share the next one.
	// It is the default.
	FsyncAlways FsyncMode = iota
	// FsyncBatch fsyncs at most once per Options.FsyncInterval and
	// confirms records after that fsync.
	FsyncBatch
	// FsyncNever confirms records once write(2) returns and leaves flushing to the OS.
	// So confirmed records can be lost on power loss.
	// The log is still fsynced before a segment rotation and on Close.
	FsyncNever
)

// ParseFsyncMode parses "always", "batch" or "never".
func ParseFsyncMode(s string) (FsyncMode, error) {
	switch s {
	case "always":
		return FsyncAlways, nil
	case "batch":
		return FsyncBatch, nil
	case "never":
		return FsyncNever, nil
	}
	return 0, fmt.Errorf("%w %q (want always, batch or never)", ErrBadFsyncMode, s)
}

// String returns the name ParseFsyncMode accepts.
func (m FsyncMode) String() string {
	switch m {
	case FsyncAlways:
		return "always"
	case FsyncBatch:
		return "batch"
	case FsyncNever:
		return "never"
	}
	return fmt.Sprintf("FsyncMode(%d)", int(m))
}

// Defaults applied by Open to zero Options fields.
const (
	DefaultFsyncInterval = 10 * time.Millisecond
	DefaultSegmentBytes  = 8 << 20
)

// Options configure Open and Inspect.
type Options struct {
	Dir             string        // data directory
	FS              FS            // nil: OS
	Fsync           FsyncMode     // default FsyncAlways
	FsyncInterval   time.Duration // FsyncBatch only; 0: DefaultFsyncInterval
	SegmentBytes    int64         // rotate the active segment past this size (a record larger than it gets a segment of its own); 0: DefaultSegmentBytes
	RecoverTruncate bool          // on mid-log corruption, start anyway (loud warning): bridge it when a snapshot holds the records it drops, else cut the log there
	ReadOnly        bool          // offline inspection: never create, truncate, delete or write anything
	// StallTimeout is how long one write or fsync of the log may take
	// before the store reports itself unhealthy.
	// It reports ErrStalled through onHealth, and goes on waiting.
	// 0 means DefaultStallTimeout, and < 0 means never.
	StallTimeout time.Duration
	Logger       *slog.Logger // nil: slog.Default()
}

// DefaultStallTimeout is Options.StallTimeout when zero.
// It is longer than the slowest fsync of a healthy SD card.
const DefaultStallTimeout = 10 * time.Second

func (o Options) withDefaults() Options {
	if o.FS == nil {
		o.FS = OS
	}
	if o.FsyncInterval <= 0 {
		o.FsyncInterval = DefaultFsyncInterval
	}
	if o.StallTimeout == 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Logger = o.Logger.With("component", "snapshot", "dir", o.Dir)
	return o
}
