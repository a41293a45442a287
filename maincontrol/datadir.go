package maincontrol

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
)

// checkDataDir refuses a data dir that every user may write to. Anyone on
// the host could then add or replace log segments and snapshots, and the
// next start would replay them: forged tasks (exec ones included, which
// executors run) and forged results. A warning would scroll past in the
// journal while the service ran on, so the main control does not start.
// A missing dir is fine: the log creates it 0700.
func checkDataDir(dir string) error {
	if runtime.GOOS == "windows" { // no such mode bits: Go reports 0777
		return nil
	}
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot use data dir: %w", err)
	}
	if st.IsDir() && st.Mode().Perm()&0o002 != 0 {
		return fmt.Errorf("%w: data dir %s is writable by every user (mode %04o): anyone on this host could rewrite its log and snapshots; chmod o-w it (a new data dir is made 0700)",
			ErrConfig, dir, st.Mode().Perm())
	}
	return nil
}
