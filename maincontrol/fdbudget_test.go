package maincontrol

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFitMaxConns(t *testing.T) {
	reserve := fdReserve(1)
	cases := []struct {
		name     string
		maxConns int
		limit    uint64
		want     int
		warns    bool // at warn level: a --max-conns set by the operator
		err      bool
	}{
		{"limit unknown", 65536, 0, 65536, false, false},
		{"room for all", 1000, 1 << 20, 1000, false, false},
		{"the unit's limit", 65536, 131072, 65536, false, false},
		{"the unit's old limit", 65536, 65536, 65536 - reserve, false, false},
		{"a shell's ulimit", 65536, 1024, 1024 - reserve, false, false},
		{"set by the operator", 5000, 1024, 1024 - reserve, true, false},
		{"a low limit", 200, 256, 256 - reserve, true, false},
		{"barely room", 100, uint64(reserve + 16), 16, true, false},
		{"no room", 100, uint64(reserve + 15), 0, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			got, err := fitMaxConns(tc.maxConns, 1, 1, tc.limit, slog.New(slog.NewTextHandler(&logs, nil)))
			if tc.err {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "open-file limit")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			if tc.limit != 0 {
				assert.LessOrEqual(t, uint64(got+fdReserve(1)), tc.limit, "fits")
			}
			assert.Contains(t, logs.String(), map[bool]string{false: "", true: "--max-conns lowered"}[got != tc.maxConns])
			assert.Equal(t, tc.warns, bytes.Contains(logs.Bytes(), []byte("level=WARN")), "warns: %s", logs.String())
		})
	}
}
