package snapshot

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadLost(t *testing.T) {
	cases := []struct {
		name    string
		content string // "" with absent: no file
		absent  bool
		want    uint64
		err     string
	}{
		{name: "no file", absent: true, want: 0},
		{name: "a count, as older binaries wrote it", content: "7\n", want: 7},
		{name: "a count after the format version", content: "apollo11 lost-records 1\n7\n", want: 7},
		{name: "a newer format", content: "apollo11 lost-records 2\n7\n",
			err: "lost-records has format version 2, and this binary reads up to version 1"},
		{name: "a bad format version", content: "apollo11 lost-records x\n7\n", err: "bad format version"},
		{name: "the largest taken", content: strconv.FormatUint(maxLost, 10), want: maxLost},
		{name: "not a count", content: "seven", err: "not a count"},
		{name: "past any log", content: strconv.FormatUint(maxLost+1, 10), err: "more records than a log can lose"},
		{name: "would wrap the ids", content: "18446744073709551615", err: "more records than a log can lose"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if !tc.absent {
				require.NoError(t, os.WriteFile(filepath.Join(dir, lostName), []byte(tc.content), 0o600))
			}
			n, err := readLost(OS, dir)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, n)
		})
	}
}
