package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apollo11/apollo11/snapshot"
)

// backupAttempts bounds the copies of a live data dir that the server's
// own clean-up may spoil, by removing a file between listing and copy.
const backupAttempts = 5

// errChanged marks a copy the live server spoiled. It is worth another try.
var errChanged = errors.New("the data dir changed under the copy")

func runBackup(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("backup", "backup --data-dir DIR DEST", stdout)
	dir := fs.String("data-dir", "apollo-data", "data directory to copy, live or stopped (read only: its lock is not taken)")
	if err := parseFlagsOperands(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError(fmt.Errorf("want one DEST, the new directory to copy into"))
	}
	dest := filepath.Clean(fs.Arg(0))
	if err := checkBackupDest(dest); err != nil {
		return err // a well-formed command line: exit 1, as other errors
	}
	if _, err := os.Stat(*dir); err != nil {
		return fmt.Errorf("cannot read data dir: %w", err)
	}
	rep, err := backupDir(*dir, dest)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backup of %s in %s: %d files, %s; a main control started on it loads %q, then the log up to lsn %d (next task id %d)\n",
		*dir, dest, rep.files, size(rep.bytes), rep.info.Dir.LoadSnapshot, rep.info.Dir.LastLSN, rep.info.NextTaskID)
	return nil
}

// checkBackupDest refuses a DEST that holds anything. A backup is a
// whole data dir, never merged into another.
func checkBackupDest(dest string) error {
	ents, err := os.ReadDir(dest)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("cannot read DEST: %w", err)
	case len(ents) > 0:
		return fmt.Errorf("DEST %s is not empty: a backup goes into a new directory", dest)
	}
	return nil
}

// backupReport is what a finished backup holds.
type backupReport struct {
	files int
	bytes int64
	info  *inspectReport
}

// backupDir copies the data dir src into the new directory dest while a
// main control may serve on src, without its lock. The copy is made in a
// temporary directory beside dest, and checked as a start would load it.
// Once whole, it is renamed to dest. A copy the live server spoiled is
// made again, at most backupAttempts times.
func backupDir(src, dest string) (*backupReport, error) {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return nil, fmt.Errorf("cannot create the parent of DEST: %w", err)
	}
	// Every change confirmed before the backup began is at or below
	// floor. A copy that loads but ends below it lost one: the server
	// dropped the segments it needed, after newer snapshots than those
	// copied. It is the lowest last record seen at any attempt: a failed
	// disk may have made the server take back records it never confirmed.
	floor := uint64(math.MaxUint64)
	var last error
	for attempt := range backupAttempts {
		now, err := snapshot.LastWritten(snapshot.Options{Dir: src})
		if err == nil {
			floor = min(floor, now)
		} else if attempt == 0 {
			return nil, fmt.Errorf("cannot read data dir: %w", err)
		}
		tmp, err := os.MkdirTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".backup-")
		if err != nil {
			return nil, fmt.Errorf("cannot create a directory beside DEST: %w", err)
		}
		rep, err := backupOnce(src, tmp, floor)
		if err == nil {
			err = publishBackup(tmp, dest)
		}
		if err == nil {
			return rep, nil
		}
		_ = os.RemoveAll(tmp)
		if !errors.Is(err, errChanged) {
			return nil, err
		}
		last = err
	}
	return nil, fmt.Errorf("no copy that loads in %d attempts (%w): a busy main control may spoil every copy, so try again, or copy the dir stopped; `apollo11 inspect --data-dir %q` tells whether the dir itself loads",
		backupAttempts, last, src)
}

// backupFiles lists what a copy takes, in the order it takes it. The
// snapshot files and the other small files come first. Each is written
// whole and never changed. Then come the log segments, which only grow.
// The log copied after a snapshot holds every record the snapshot lacks.
// The server may have dropped part of it meanwhile, and the check finds
// that gap. The lock and temporary files are left out.
func backupFiles(src string) (first, logs []string, err error) {
	ents, err := os.ReadDir(src)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read data dir: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		switch {
		case !e.Type().IsRegular(), name == "lock", strings.HasPrefix(name, "."), strings.HasSuffix(name, ".tmp"):
		case strings.HasSuffix(name, ".log"):
			logs = append(logs, name)
		default:
			first = append(first, name)
		}
	}
	slices.Sort(first)
	slices.Sort(logs)
	return first, logs, nil
}

// backupOnce makes one copy of src in the empty directory tmp, fsyncs it
// and checks that a main control would start on it.
func backupOnce(src, tmp string, floor uint64) (*backupReport, error) {
	first, logs, err := backupFiles(src)
	if err != nil {
		return nil, err
	}
	rep := &backupReport{}
	var before []copied // segments copied before the last one found gone
	for _, group := range []struct {
		what  string
		names []string
	}{{"snapshots", first}, {"log", logs}} {
		for _, name := range group.names {
			isLog := strings.HasSuffix(name, ".log")
			n, err := copyFile(filepath.Join(src, name), filepath.Join(tmp, name), !isLog)
			if errors.Is(err, fs.ErrNotExist) {
				// The server removed it since the listing. It was an old
				// snapshot, or segments a newer snapshot holds. The check
				// below tells whether the copy still loads without it.
				if isLog {
					// The server drops segments oldest first, so those
					// copied before this one end in a gap that recovery
					// refuses. Without them the copy may still load.
					if err := dropCopied(tmp, before, rep); err != nil {
						return nil, err
					}
					before = nil
				}
				continue
			}
			if err != nil {
				return nil, err
			}
			rep.files++
			rep.bytes += n
			if isLog {
				before = append(before, copied{name, n})
			}
			backupFileHook(name)
		}
		backupHook(group.what)
	}
	if err := syncDir(tmp); err != nil {
		return nil, err
	}
	rep.info, err = inspectDir(tmp, 0)
	if err == nil && rep.info.Dir.OpenError != "" {
		err = errors.New(rep.info.Dir.OpenError)
	}
	if err != nil {
		// The files were copied whole, so the server spoiled a copy that
		// would not load. It dropped a segment after a newer snapshot.
		// Such a copy is never published, and is tried again.
		return nil, fmt.Errorf("%w: the copy would not load: %v", errChanged, err)
	}
	if rep.info.Dir.LastLSN < floor {
		return nil, fmt.Errorf("%w: the copy ends at record %d, before record %d, the last one written when the backup began",
			errChanged, rep.info.Dir.LastLSN, floor)
	}
	return rep, nil
}

// backupHook runs after each group of files ("snapshots", "log") is
// copied, and backupFileHook after each file. Tests make the live
// server's clean-up happen there.
var (
	backupHook     = func(group string) {}
	backupFileHook = func(name string) {}
)

// copied is a file a copy holds, and its size.
type copied struct {
	name  string
	bytes int64
}

// dropCopied removes files from the copy tmp, and from its count.
func dropCopied(tmp string, files []copied, rep *backupReport) error {
	for _, f := range files {
		if err := os.Remove(filepath.Join(tmp, f.name)); err != nil {
			return fmt.Errorf("cannot remove %s from the copy: %w", f.name, err)
		}
		rep.files--
		rep.bytes -= f.bytes
	}
	return nil
}

// copyFile copies src to dst and fsyncs dst. A snapshot is written whole.
// A snapshot whose size changed, or a segment that shrank, is errChanged.
// A file that is gone is fs.ErrNotExist.
func copyFile(src, dst string, fixed bool) (int64, error) {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("cannot read %s: %w", src, err)
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return 0, fmt.Errorf("cannot read %s: %w", src, err)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, fmt.Errorf("cannot create %s: %w", dst, err)
	}
	n, err := io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("cannot copy %s: %w", src, err)
	}
	if fixed && n != st.Size() || n < st.Size() {
		return 0, fmt.Errorf("%w: %s changed size while copied (%d bytes, then %d)", errChanged, filepath.Base(src), st.Size(), n)
	}
	return n, nil
}

// publishBackup renames the checked copy to dest, replacing an empty
// directory, and makes the rename durable.
func publishBackup(tmp, dest string) error {
	if err := checkBackupDest(dest); err != nil {
		return err
	}
	if err := os.Rename(tmp, dest); err != nil {
		return fmt.Errorf("cannot move the copy to %s: %w", dest, err)
	}
	return syncDir(filepath.Dir(dest))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cannot open %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cannot fsync %s: %w", dir, err)
	}
	return nil
}
