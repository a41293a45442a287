// bridge.go: how recovery gets past a corrupt record the base snapshot covers.

package snapshot

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// bridgePlan is how RecoverTruncate gets past a corrupt record.
// It loses no record that the base snapshot does not hold (see bridge).
type bridgePlan struct {
	seg *segment // the damaged segment, as scanned up to the corrupt record
	p   *Problem // the corrupt record
	res *resumed // where the segment's records resume after it
	// target is the segment file the resumed records are rewritten to.
	// It is named after their first LSN, which may be seg's own name.
	target string
	// leftover means target follows seg in the listing.
	// A bridge wrote it, and a crash interrupted it before it removed seg.
	// It holds what this bridge writes again.
	leftover bool
}

// planBridge decides whether RecoverTruncate can bridge the corrupt record
// p of seg rather than cut the log there.
// The base snapshot must hold the LSN the record should have had.
// The segment's records must resume (resync) at most one LSN past the base.
// They must run to the end of the file and on into the next segment.
// It returns nil when any of that fails, and then the log is cut as before.
func (r *recovery) planBridge(seg *segment, p *Problem, later []string, newest bool) (*bridgePlan, error) {
	lsn := seg.last + 1 // the LSN the corrupt record should have had
	if r.base == nil || lsn > r.base.lsn {
		return nil, nil
	}
	f, err := r.opts.FS.OpenFile(r.path(seg.name), os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot open log segment %s: %w", seg.name, err)
	}
	defer f.Close()
	res, err := resync(f, seg.name, p.Offset, seg.fileSize, lsn, r.base.lsn+1, newest)
	if err != nil {
		return nil, fmt.Errorf("cannot read log segment %s: %w", seg.name, err)
	}
	if res == nil {
		return nil, nil
	}
	b := &bridgePlan{seg: seg, p: p, res: res, target: segName(res.first)}
	if len(later) > 0 && later[0] == b.target {
		// A segment named inside seg's LSNs is a bridge interrupted after
		// its rename. Anything else by that name is not ours to replace.
		same, err := r.holdsResumed(f, res, b.target)
		if err != nil {
			return nil, err
		}
		if !same {
			r.log.Warn("a segment overlaps the records of the damaged one; not bridging", "file", seg.name, "other", b.target)
			r.foreign = b.target
			return nil, nil
		}
		b.leftover = true
		later = later[1:]
	}
	if len(later) > 0 && firstLSN(later[0]) != res.last+1 {
		return nil, nil
	}
	return b, nil
}

// holdsResumed reports whether segment file name holds exactly the bytes
// of res in f, after its header. An older binary's bridge wrote no header.
func (r *recovery) holdsResumed(f File, res *resumed, name string) (bool, error) {
	n := res.end - res.start
	other, err := r.opts.FS.OpenFile(r.path(name), os.O_RDONLY, 0)
	if err != nil {
		return false, fmt.Errorf("cannot open log segment %s: %w", name, err)
	}
	defer other.Close()
	st, err := other.Stat()
	if err != nil {
		return false, fmt.Errorf("cannot stat log segment %s: %w", name, err)
	}
	hdr, p, err := readSegHeader(other, name, st.Size(), false)
	if err != nil {
		return false, fmt.Errorf("cannot read log segment %s: %w", name, err)
	}
	if p != nil || st.Size()-hdr != n {
		return false, nil
	}
	want, got := make([]byte, n), make([]byte, n)
	if _, err := f.ReadAt(want, res.start); err != nil {
		return false, fmt.Errorf("cannot read log segment %s: %w", f.Name(), readErr(err))
	}
	if _, err := other.ReadAt(got, hdr); err != nil {
		return false, fmt.Errorf("cannot read log segment %s: %w", name, readErr(err))
	}
	return bytes.Equal(want, got), nil
}

// bridge gets past the corrupt record of b without cutting the log.
// Let R be the LSN the segment resumes with (b.res.first).
// Every record before R is dropped, and every record from R on is kept.
// That loses nothing, because R-1 is at most the base snapshot's LSN.
// Replay starts after the base, so it never needed what is dropped.
// Nothing is added to lost. Only a fallback to an older snapshot is lost.
// That fallback would need the records after the older snapshot.
//
// The log must stay a list of files named by their first LSN.
// Their records must be consecutive, and recoverLog checks that at every Open.
// So the records from R on are rewritten into a new segment file named R.
// The damaged segment and every segment before it are removed.
// All their other records are below R. The steps run in this order:
//
//  1. A torn tail after the resumed records is cut off the damaged segment
//     and fsynced. Only the newest segment has one. Open does the same.
//  2. The resumed records are copied into a temporary file. It is fsynced
//     and renamed to <R>.log, and the directory is fsynced (createAtomic).
//  3. The segments before the damaged one are removed, oldest first.
//     The damaged one goes last. The directory is fsynced after each removal.
//
// A crash at any point leaves a dir that a later Open handles without loss.
// Before step 2's rename, the damaged segment is as it was.
// Step 1 only cut a torn tail, and a leftover temporary file is swept.
// So Open refuses it again, or bridges it again.
// After the rename, <R>.log sits after the damaged segment in the listing.
// The damaged segment is still whole and still first among what is left.
// That holds because removals run oldest first and are durable one by one.
// So Open without RecoverTruncate refuses it again.
// With RecoverTruncate, Open bridges it again.
// planBridge finds <R>.log holding exactly the records it would write.
// Open then writes it again.
// Once the damaged segment is removed, <R>.log heads the log.
// Nothing is amiss then. No record is appended before Open has finished.
// So <R>.log never grows while the damaged segment exists.
// If R is the damaged segment's own first LSN, the rename replaces it in one step.
//
// With ReadOnly, nothing is written or removed.
// The Store's view of the log starts at R inside the damaged file (segment.start).
// So Replay and ReadLog read what a real Open would leave.
func (r *recovery) bridge(b *bridgePlan) error {
	res, p, seg := b.res, b.p, b.seg
	var removed []string
	for _, s := range r.segs {
		removed = append(removed, s.name)
	}
	if b.target != seg.name {
		removed = append(removed, seg.name)
	}
	p.Bridge = &Bridge{FirstLSN: seg.last + 1, LastLSN: res.first - 1, ResumeOffset: res.start,
		Snapshot: r.base.name, Segment: b.target}
	r.problems = append(r.problems, *p)
	r.log.Error("LOG CORRUPTION: RecoverTruncate bridges it; the snapshot holds every record skipped, none after it is lost",
		"file", seg.name, "offset", p.Offset, "reason", p.Detail,
		"skipped_lsns", fmt.Sprintf("%d..%d", p.Bridge.FirstLSN, p.Bridge.LastLSN), "snapshot", r.base.name,
		"resume_offset", res.start, "resume_lsn", res.first, "last_lsn", res.last,
		"new_segment", b.target, "removed_segments", removed)
	r.warnLostFallbacks(res.first)
	if res.torn != nil {
		r.problems = append(r.problems, *res.torn)
		r.log.Warn("cutting torn tail of the newest log segment", "file", seg.name,
			"offset", res.torn.Offset, "bytes", res.torn.Bytes, "reason", res.torn.Detail)
	}
	kept := &segment{name: b.target, first: res.first, last: res.last, size: res.end - res.start,
		records: res.records, header: fileHeaderSize, start: fileHeaderSize, fileSize: fileHeaderSize + res.end - res.start}
	if r.opts.ReadOnly {
		kept.name, kept.header, kept.start, kept.fileSize = seg.name, seg.header, res.start, seg.fileSize
		r.segs = []*segment{kept}
		return nil
	}
	if res.torn != nil {
		if err := r.cut(seg.name, res.end); err != nil {
			return err
		}
	}
	if err := r.rewrite(seg.name, res, b.target); err != nil {
		return err
	}
	for _, name := range removed {
		if err := r.remove(name); err != nil {
			return err
		}
		if err := r.opts.FS.SyncDir(r.opts.Dir); err != nil {
			return fmt.Errorf("cannot fsync data dir %s: %w", r.opts.Dir, err)
		}
	}
	r.segs = []*segment{kept}
	return nil
}

// rewrite atomically copies the records of res in segment name
// into the segment file target.
func (r *recovery) rewrite(name string, res *resumed, target string) error {
	f, err := r.opts.FS.OpenFile(r.path(name), os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("cannot open log segment %s: %w", name, err)
	}
	defer f.Close()
	a, err := createAtomic(r.opts.FS, r.path(target))
	if err != nil {
		return fmt.Errorf("cannot create log segment %s: %w", target, err)
	}
	if _, err := a.Write(appendFileHeader(nil, segMagic, segVersion)); err != nil {
		a.Abort()
		return fmt.Errorf("cannot write log segment %s: %w", target, err)
	}
	n, err := io.Copy(a, io.NewSectionReader(f, res.start, res.end-res.start))
	if err == nil && n != res.end-res.start {
		err = readErr(io.ErrUnexpectedEOF)
	}
	if err != nil {
		a.Abort()
		return fmt.Errorf("cannot copy log segment %s into %s: %w", name, target, err)
	}
	if err := a.Commit(); err != nil {
		return fmt.Errorf("cannot write log segment %s: %w", target, err)
	}
	r.changed = true
	return nil
}
