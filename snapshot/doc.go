// Package snapshot is the storage layer of the main control.
// It implements spec wire-v1, section 7, "Durability".
// It knows nothing about tasks.
// It stores opaque records in an append-only segmented log.
// It stores opaque entries in atomic snapshot files.
//
// # Layout of the data dir
//
//   - <first LSN, 20 digits>.log: log segments. Names sort in write order.
//     Each starts with a file header holding its format version (see format.go).
//     Segments of older binaries have none. They are still read, never appended to.
//     Then come consecutive big-endian records `len uint32 | crc uint32 | lsn uint64 | payload`.
//     crc is CRC32C over the len bytes, the lsn bytes and the payload.
//     So the checksum covers the length. LSNs are consecutive across segments.
//     The active segment is rotated once it would grow past Options.SegmentBytes.
//     A new segment is created only after the previous one is fsynced.
//     The directory is fsynced after the creation.
//   - snapshot-<LSN, 20 digits>: a snapshot of the caller's state as of that LSN.
//     It has a header (magic, format version, LSN) and entries (`len uint32 | payload`).
//     A trailer ends it, with the entry count and a CRC32C of every byte before it.
//     Format 1 holds the whole state (WriteSnapshot).
//     Formats 2 and 3 are a manifest (WriteIncremental, manifest.go).
//     Format 3 may list runs parts; format 2 never does.
//     Its first entry lists the parts it uses and the base of each key range.
//     The other entries are head entries.
//     It is written atomically with renameio: temp file in the data dir, fsync, rename.
//     Then the directory is fsynced (see atomic.go).
//     The newest two are kept, with every part either uses.
//   - snapshot-<LSN>-tasks, snapshot-<LSN>-runs, snapshot-<LSN>-state: parts (part.go).
//     The snapshot at LSN writes them, and they never change.
//     They hold keyed entries and tombstones (keys below RunKeys, or from
//     it up), or the unkeyed state.
//     A part is removed once no kept snapshot uses it.
//     Open removes the parts no loadable snapshot uses.
//   - .<name><digits> (renameio's) and *.tmp (older binaries'): temporary files.
//     <name> is one of the names above, or lost-records.
//     Open sweeps them with a warning. Other dot files are left alone.
//
// A file of a format newer than this binary reads stops Open.
// The *FormatError names the file and both versions.
// The version is trusted only when the file's checksum holds.
// Otherwise the file is damaged.
//
// # Durability contract
//
// Append never touches the disk.
// It encodes the record into a pending batch under a short mutex and returns its LSN.
// A writer goroutine (Start) writes batches.
// In FsyncAlways mode it fsyncs as soon as possible, with group commit.
// Whatever arrives during one fsync shares the next.
// FsyncBatch fsyncs at most once per FsyncInterval.
// FsyncNever confirms after write(2).
// onDurable(lsn) then tells the caller that every record up to lsn is durable.
// So it may send the replies that confirm those changes.
// Nothing is reported durable before it is written.
// Except with FsyncNever, nothing is reported durable before it is fsynced either.
//
// A write or fsync may fail (ENOSPC, EIO). Then onHealth(err) is called.
// The records stay in memory in order.
// The writer retries every second and whenever records arrive.
// It truncates the active segment back to the last durable record.
// Then it rewrites everything pending.
// On success onHealth(nil) and onDurable follow.
// Close writes and fsyncs what is pending in every mode.
//
// # Recovery
//
// Open validates the log. Some damage is a torn write:
// a record running past the end of the newest segment,
// a bad checksum on its last record, or a tail of zero bytes.
// A torn write is cut off with a warning.
// Any other bad record stops Open with a *CorruptError naming the file and offset.
// Options.RecoverTruncate changes that.
// With it, the damage may be bridged.
// That needs the newest valid snapshot to hold the bad record's LSN.
// It also needs whole, consecutive records to resume after the damage,
// by the snapshot's LSN plus one.
// The records from there on are rewritten into a new segment, and those before are dropped.
// Nothing Replay needs is lost, but an older snapshot can no longer be a fallback.
// Sometimes nothing whole resumes in the damaged segment, or a segment is missing.
// If the next whole segment starts by the snapshot's LSN plus one,
// the segments before it are dropped.
// Again nothing Replay needs is lost.
// Bad bytes after a segment's last record hold no record when the next segment continues.
// They are cut.
// Otherwise the log is cut there and every later record is lost (see Store.Lost).
// Replay then loads the newest valid snapshot and the log records after it.
// It falls back to the previous snapshot if the newest one's checksum fails.
// WriteSnapshot deletes only segments whose records all precede the previous snapshot.
// So that fallback still finds its log.
package snapshot
