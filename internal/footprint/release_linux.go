package footprint

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Release drops this process's mappings of the read-only segments of
// its own executable (code and constants). The writable segment is left
// alone. Dropping it would lose the process's own changes.
func Release() error {
	st, err := os.Stat("/proc/self/exe")
	if err != nil {
		return err
	}
	ino := st.Sys().(*syscall.Stat_t).Ino
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// start-end perms offset dev inode path
		f := strings.Fields(sc.Text())
		if len(f) < 6 || strings.Contains(f[1], "w") || f[4] != strconv.FormatUint(ino, 10) {
			continue
		}
		start, end, ok := parseRange(f[0])
		if !ok {
			return fmt.Errorf("footprint: cannot read the mapping %q", f[0])
		}
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("footprint: madvise %s: %w", f[0], errno)
		}
	}
	return sc.Err()
}

// parseRange reads "start-end" in hex.
func parseRange(s string) (start, end uintptr, ok bool) {
	a, b, ok := strings.Cut(s, "-")
	x, err1 := strconv.ParseUint(a, 16, 64)
	y, err2 := strconv.ParseUint(b, 16, 64)
	return uintptr(x), uintptr(y), ok && err1 == nil && err2 == nil && y > x
}
