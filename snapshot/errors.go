package snapshot

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package. Errors returned by the Store wrap them
// with %w, so match them with errors.Is.
var (
	// ErrClosed means the Store is closed.
	ErrClosed = errors.New("store closed")
	// ErrReadOnly means a write was asked of a Store opened with ReadOnly.
	ErrReadOnly = errors.New("store is read-only")
	// ErrSnapshotBusy means WriteSnapshot was called while another one runs.
	ErrSnapshotBusy = errors.New("a snapshot is already being written")
	// ErrSnapshotAhead means WriteSnapshot was given an LSN past LastLSN.
	ErrSnapshotAhead = errors.New("snapshot LSN is past the last appended LSN")
	// ErrStaleSnapshot means a snapshot at this LSN or later already exists.
	ErrStaleSnapshot = errors.New("a snapshot at this LSN or later already exists")
	// ErrCorrupt is matched by *CorruptError. A log record that is not a
	// torn tail fails its checksum, or LSNs are not consecutive.
	ErrCorrupt = errors.New("corrupt log")
	// ErrBadSnapshot means a snapshot file fails its checksum or structure checks.
	ErrBadSnapshot = errors.New("invalid snapshot")
	// ErrMissingLog means log records needed for replay are not on disk.
	// They start after the loaded snapshot, or at LSN 1 without a valid one.
	ErrMissingLog = errors.New("log records needed for replay are missing")
	// ErrReplayOrder means Replay was called twice, or after Start.
	ErrReplayOrder = errors.New("Replay must be called once, before Start")
	// ErrBadFsyncMode means ParseFsyncMode was given an unknown name.
	ErrBadFsyncMode = errors.New("unknown fsync mode")
	// ErrStalled is reported through onHealth when one write or fsync of
	// the log has not returned within Options.StallTimeout.
	ErrStalled = errors.New("log write stalled")
)

// CorruptError reports a log record that fails its checksum or breaks the
// LSN sequence. A torn tail of the newest segment is not one. Open returns
// it unless Options.RecoverTruncate is set.
type CorruptError struct {
	File   string // segment file name (base name)
	Offset int64  // byte offset of the bad record in File
	Reason string // what is wrong, e.g. "checksum mismatch"
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt log segment %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// Unwrap makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }
