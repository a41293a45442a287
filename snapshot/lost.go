package snapshot

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// lostName is the file in the data dir that counts the confirmed records
// RecoverTruncate dropped. It keeps the count until the caller has made up
// for them (Store.ClearLost). It is written before any record is cut.
// So a crash between the cut and the caller's own record cannot forget the loss.
// The next Open reports it again.
const lostName = "lost-records"

// lostFormat starts the file and carries its format version.
// Older binaries wrote the bare count, which is still read.
const (
	lostFormat  = "apollo11 lost-records "
	lostVersion = 1
)

// readLost returns the count kept in lostName, 0 when there is none.
func readLost(fsys FS, dir string) (uint64, error) {
	f, err := fsys.OpenFile(filepath.Join(dir, lostName), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cannot open %s: %w", lostName, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64))
	if err != nil {
		return 0, fmt.Errorf("cannot read %s: %w", lostName, err)
	}
	text := string(b)
	if rest, ok := strings.CutPrefix(text, lostFormat); ok {
		line, count, _ := strings.Cut(rest, "\n")
		v, err := strconv.ParseUint(line, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%s in %s has a bad format version %q: fix or remove it (then task ids may repeat)", lostName, dir, line)
		}
		if err := checkFormat(lostName, uint32(v), lostVersion); err != nil {
			return 0, err
		}
		text = count
	}
	n, err := strconv.ParseUint(strings.TrimSpace(text), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s in %s holds %q, not a count: fix or remove it (then task ids may repeat)", lostName, dir, b)
	}
	if n > maxLost {
		// The main control skips this many task ids.
		// A count no log could have held, as in a hand-edited file,
		// would wrap the id counter and hand out ids again.
		return 0, fmt.Errorf("%s in %s holds %d, more records than a log can lose: fix or remove it (then task ids may repeat)", lostName, dir, n)
	}
	return n, nil
}

// maxLost is the largest count of lost records taken, 2^48.
// It is far more records than any log holds, and far from wrapping a task id.
const maxLost = 1 << 48

// addLost adds n to the count of lost records.
// r.lost starts at the count kept in lostName.
// It keeps the sum there durably before the records are dropped.
func (r *recovery) addLost(n uint64) error {
	r.lost += n
	if r.opts.ReadOnly {
		return nil
	}
	a, err := createAtomic(r.opts.FS, filepath.Join(r.opts.Dir, lostName))
	if err != nil {
		return fmt.Errorf("cannot record the lost records: %w", err)
	}
	if _, err := fmt.Fprintf(a, "%s%d\n%d\n", lostFormat, lostVersion, r.lost); err != nil {
		a.Abort()
		return fmt.Errorf("cannot record the lost records: %w", err)
	}
	return a.Commit()
}

// ClearLost forgets the records Open reported as lost (see Lost).
// Call it once the caller has made up for them durably.
func (s *Store) ClearLost() error {
	if s.lost == 0 {
		return nil
	}
	if err := s.fsys.Remove(filepath.Join(s.dir, lostName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove %s: %w", lostName, err)
	}
	if err := s.fsys.SyncDir(s.dir); err != nil {
		return err
	}
	s.lost = 0
	return nil
}
