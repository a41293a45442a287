package maincontrol

import (
	"bytes"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/cluster"
)

func TestFitMaxConns(t *testing.T) {
	reserve := fdReserve(1, false)
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
			got, err := fitMaxConns(tc.maxConns, 1, reserve, tc.limit, slog.New(slog.NewTextHandler(&logs, nil)))
			if tc.err {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "open-file limit")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			if tc.limit != 0 {
				assert.LessOrEqual(t, uint64(got+reserve), tc.limit, "fits")
			}
			assert.Contains(t, logs.String(), map[bool]string{false: "", true: "--max-conns lowered"}[got != tc.maxConns])
			assert.Equal(t, tc.warns, bytes.Contains(logs.Bytes(), []byte("level=WARN")), "warns: %s", logs.String())
		})
	}
}

// A cluster member keeps its raft transport's descriptors out of the
// main port's budget: raft churn cannot take the main port's fds.
func TestFitMaxConns_ClusterMemberKeepsRaftsDescriptors(t *testing.T) {
	plain, member := fdReserve(1, false), fdReserve(1, true)
	assert.Equal(t, cluster.TransportFDs, member-plain)
	assert.GreaterOrEqual(t, cluster.TransportFDs, 2*cluster.DefaultMaxConns, "accepted and dialled")
	got, err := fitMaxConns(65536, 1, member, 1024, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	assert.Equal(t, 1024-member, got)
}
