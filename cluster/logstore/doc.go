// Package logstore keeps raft's log and stable state in the project's own
// log files. Store implements raft.LogStore, raft.MonotonicLogStore and
// raft.StableStore.
//
// # Layout of its directory
//
//   - <first index, 20 digits>.log: segments of raft's log. Each starts
//     with a file header holding its format version. Then come records
//     framed as the main control's log frames them (snapshot.AppendRecord):
//     length, CRC32C, and the raft index as the record's number. The
//     payload is one raft entry (entry.go). Indexes run on across segments.
//     A segment is rotated once it would grow past Options.SegmentBytes.
//   - first: the first index kept, after a prefix delete that ends inside
//     a segment. Segments wholly before it are removed.
//   - stable: raft's term and vote, as key/value pairs in one record.
//   - lock: the directory's flock, so that two processes never share it.
//
// first and stable are written whole or not at all (renameio). The
// directory is fsynced after stable, not after first: a crash may bring
// back entries raft already deleted, which it deletes again.
//
// # Durability
//
// StoreLogs writes a batch with one write and one fsync before it returns.
// A new segment's directory entry is fsynced before records go into it.
// A suffix delete removes later segments, fsyncs the directory, then
// truncates and fsyncs the segment it ends in. So a crash at any point
// leaves a log of consecutive indexes.
//
// # Recovery
//
// Open checks every record. A torn write at the end of the newest segment
// is cut with a warning, by the main control's log rules (snapshot.ScanLog).
// Any other bad record is a *snapshot.CorruptError naming the file and
// offset. A gap between segments is an error naming the file.
package logstore
