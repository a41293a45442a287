package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// CheckProgram refuses an allow-list entry that other users could change.
// Such a program could be replaced, if any user may write to it or to its
// directory. Every exec task would then run the replacement as the
// executor's user. Both the path as given and the file it resolves to are
// checked. No directory on the way may be world-writable, unless its
// sticky bit keeps others from renaming what they do not own (as in
// /tmp). The program's own directory must not be world-writable at all.
func CheckProgram(path string) error {
	if runtime.GOOS == "windows" { // no such mode bits
		return nil
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	st, err := os.Stat(real)
	if err != nil {
		return err
	}
	if st.Mode().Perm()&0o002 != 0 {
		return fmt.Errorf("%s is writable by every user (mode %04o): anyone could replace what exec runs; chmod o-w it", real, st.Mode().Perm())
	}
	for _, p := range []string{path, real} {
		for dir, own := filepath.Dir(p), true; ; dir, own = filepath.Dir(dir), false {
			st, err := os.Stat(dir)
			if err != nil {
				return err
			}
			if m := st.Mode(); m&0o002 != 0 && (own || m&os.ModeSticky == 0) {
				return fmt.Errorf("%s is in %s, which every user may write to (mode %04o): anyone could replace what exec runs; move it, or chmod o-w the directory",
					path, dir, m.Perm())
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
	}
	return nil
}
