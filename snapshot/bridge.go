// bridge.go: how recovery gets past a corrupt record the base snapshot covers.

package snapshot

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// bridgePlan is how RecoverTruncate gets past a corrupt record without
// losing a record that the base snapshot does not hold (see bridge).
type bridgePlan struct {
	seg *segment // the damaged segment, as scanned up to the corrupt record
	p   *Problem // the corrupt record
	res *resumed // where the segment's records resume after it
	// target is the segment file the resumed records are rewritten to,
	// named after their first LSN (it may be seg's own name).
	target string
	// leftover: target follows seg in the listing, written by a bridge a
	// crash interrupted before it removed seg (it holds what this bridge
	// writes again).
	leftover bool
}

// planBridge decides whether RecoverTruncate can bridge the corrupt record
// p of seg rather than cut the log there: the base snapshot must hold the
// LSN the record should have had, and the segment's records must resume
// (resync) at a record whose LSN is at most one past the base, running to
// the end of the file and continued by the next segment, later. It
// returns nil when any of that fails: then the log is cut, as before.
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
		// A segment named inside seg's LSNs: a bridge interrupted after
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
// of res in f, after its header (an older binary's bridge wrote none).
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

// bridge gets past the corrupt record of b without cutting the log: every
// record before the one the segment resumes with (LSN R = b.res.first) is
// dropped, and every record from R on is kept. That loses nothing: R-1 is
// at most the base snapshot's LSN, so Replay, which starts after the
// base, never needed what is dropped; nothing is added to lost. Only a
// fallback to an older snapshot, which would need the records after it,
// is no longer possible.
//
// The log must stay a list of files named by their first LSN with
// consecutive records (recoverLog checks that at every Open), so the
// records from R on are rewritten into a new segment file named R, and
// the damaged segment and every segment before it are removed: all their
// other records are below R. In this order:
//
//  1. a torn tail after the resumed records (newest segment only) is cut
//     off the damaged segment and fsynced, as Open does for any torn tail;
//  2. the resumed records are copied into a temporary file, which is
//     fsynced, renamed to <R>.log, and the directory fsynced (createAtomic);
//  3. the segments before the damaged one are removed, oldest first, then
//     the damaged one, the directory being fsynced after each removal.
//
// A crash at any point leaves a dir that a later Open handles without a
// loss. Before step 2's rename the damaged segment is as it was (step 1
// only cut a torn tail, and a leftover temporary file is swept): Open refuses it
// again, or bridges it again. After the rename, <R>.log sits after the
// damaged segment in the listing; the damaged segment is still whole and
// still first among what is left (removals run oldest first and are
// durable one by one, the damaged one last), so Open refuses it again
// without RecoverTruncate, and with it bridges it again, finds <R>.log
// holding exactly the records it would write (planBridge), and writes it
// again. Once the damaged segment is removed, <R>.log heads the log and
// nothing is amiss. No record is appended before Open has finished, so
// <R>.log never grows while the damaged segment exists. (If R is the
// damaged segment's own first LSN, the rename replaces it in one step.)
//
// With ReadOnly nothing is written or removed: the Store's view of the
// log starts at R inside the damaged file (segment.start), so Replay and
// ReadLog read what a real Open would leave.
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

// rewrite copies the records of res in segment name into the segment
// file target, atomically.
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
