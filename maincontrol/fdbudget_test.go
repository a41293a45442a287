package maincontrol

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFitMaxConns(t *testing.T) {
	reserve := func(limit uint64) int { return fdReserve(1, listenBacklog(limit)) }
	cases := []struct {
		name     string
		maxConns int
		limit    uint64
		want     int
		backlog  int
		warns    bool // at warn level: a --max-conns set by the operator
		err      bool
	}{
		{"limit unknown", 65536, 0, 65536, 0, false, false},
		{"room for all", 1000, 1 << 20, 1000, 4096, false, false},
		{"the unit's limit", 65536, 131072, 65536, 4096, false, false},
		{"the unit's old limit", 65536, 65536, 65536 - reserve(65536), 4096, false, false},
		{"a shell's ulimit", 65536, 1024, 1024 - reserve(1024), 256, false, false},
		{"set by the operator", 5000, 1024, 1024 - reserve(1024), 256, true, false},
		{"a low limit", 100, 256, 256 - reserve(256), 128, true, false},
		{"barely room", 100, uint64(reserve(300) + 16), 16, 128, true, false},
		{"no room", 100, uint64(reserve(200) + 15), 0, 0, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			got, backlog, err := fitMaxConns(tc.maxConns, 1, tc.limit, slog.New(slog.NewTextHandler(&logs, nil)))
			if tc.err {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "open-file limit")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.backlog, backlog)
			if tc.limit != 0 {
				assert.LessOrEqual(t, uint64(got+fdReserve(1, backlog)), tc.limit, "fits")
			}
			assert.Contains(t, logs.String(), map[bool]string{false: "", true: "--max-conns lowered"}[got != tc.maxConns])
			assert.Equal(t, tc.warns, bytes.Contains(logs.Bytes(), []byte("level=WARN")), "warns: %s", logs.String())
		})
	}
}
