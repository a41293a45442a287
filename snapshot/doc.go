// Package snapshot is the storage layer of the main control (spec
// wire-v1, section 7, "Durability"). It knows nothing about tasks: it
// stores opaque records in an append-only segmented log and opaque entries
// in atomic snapshot files.
//
// # Layout of the data dir
//
//   - <first LSN, 20 digits>.log: log segments; names sort in write order.
//     Each starts with a file header holding its format version (see
//     format.go; segments of older binaries have none and are still
//     read, never appended to), then holds consecutive records
//     `len uint32 | crc uint32 | lsn uint64 | payload` (big-endian), where
//     crc is CRC32C over the len bytes, the lsn bytes and the payload, so
//     the checksum covers the length. LSNs are consecutive across segments.
//     The active segment is rotated once it would grow past
//     Options.SegmentBytes; a new segment is created only after the
//     previous one is fsynced, and the directory is fsynced after the
//     creation.
//   - snapshot-<LSN, 20 digits>: a snapshot of the caller's state as of
//     that LSN: header (magic, format version, LSN), entries
//     (`len uint32 | payload`) and a trailer (entry count, CRC32C of every
//     byte before it). Format 1 holds the whole state (WriteSnapshot);
//     format 2 is a manifest (WriteIncremental, manifest.go): its first
//     entry lists the parts it uses and the base of each key range, the
//     others are head entries. Written atomically with renameio (temp
//     file in the data dir, fsync, rename), then the directory is
//     fsynced; see atomic.go. The newest two are kept, with every part
//     either uses.
//   - snapshot-<LSN>-tasks, snapshot-<LSN>-state: parts (part.go), written
//     by the snapshot at LSN and never changed: keyed entries and
//     tombstones, or the unkeyed state. A part is removed once no kept
//     snapshot uses it; Open removes the parts no loadable snapshot uses.
//   - .<name><digits> (renameio's, <name> being one of the names above
//     or lost-records) and *.tmp (older binaries'): temporary files,
//     swept (with a warning) by Open. Other dot files are left alone.
//
// A file of a format newer than this binary reads stops Open with a
// *FormatError naming the file and both versions. The version is trusted
// only when the file's checksum holds; otherwise the file is damaged.
//
// # Durability contract
//
// Append never touches the disk: it encodes the record into a pending
// batch under a short mutex and returns its LSN. A writer goroutine
// (Start) writes batches and, in FsyncAlways mode, fsyncs as soon as
// possible with group commit: whatever arrives during one fsync shares the
// next. FsyncBatch fsyncs at most once per FsyncInterval; FsyncNever
// confirms after write(2). onDurable(lsn) then tells the caller that every
// record up to lsn is durable, so it may send the replies that confirm
// those changes; nothing is reported durable before it is written (and,
// except with FsyncNever, fsynced).
//
// When a write or fsync fails (ENOSPC, EIO), onHealth(err) is called, the
// records stay in memory in order and the writer retries every second and
// whenever records arrive: it truncates the active segment back to the
// last durable record and rewrites everything pending. On success
// onHealth(nil) and onDurable follow. Close writes and fsyncs what is
// pending in every mode.
//
// # Recovery
//
// Open validates the log: a record running past the end of the newest
// segment, a bad checksum on its last record, or a tail of zero bytes is a
// torn write and is cut off with a warning. Any other bad record stops
// Open with a *CorruptError naming the file and offset, unless
// Options.RecoverTruncate is set. Then, when the newest valid snapshot
// holds the bad record's LSN and whole, consecutive records resume after
// the damage by the snapshot's LSN plus one, the damage is bridged: the
// records from there on are rewritten into a new segment, those before
// are dropped, and nothing Replay needs is lost (an older snapshot can no
// longer be a fallback). When nothing whole resumes in the damaged
// segment, or a segment is missing, and the next whole segment starts by
// the snapshot's LSN plus one, the segments before it are dropped, again
// losing nothing Replay needs. Bad bytes after a segment's last record
// that the next segment continues hold no record, and are cut. Otherwise
// the log is cut there and every later record is lost (see Store.Lost). Replay then loads the newest
// valid snapshot (falling back to the previous one if its checksum fails)
// and the log records after it. WriteSnapshot deletes only segments whose
// records all precede the previous snapshot, so that fallback still finds
// its log.
package snapshot
