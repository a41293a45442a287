package maincontrol_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
)

// budgetOf returns the budget's bytes for the item whose text starts so.
func budgetOf(t *testing.T, cfg maincontrol.Config, prefix string) int64 {
	t.Helper()
	items, err := maincontrol.MemoryBudget(cfg)
	require.NoError(t, err)
	for _, it := range items {
		if strings.HasPrefix(it.What, prefix) {
			return it.Bytes
		}
	}
	t.Fatalf("no budget item %q", prefix)
	return 0
}

// --max-buffers shares itself among the three totals of the connections'
// buffers; without it each keeps its own default, 320 MiB in all.
func TestMemoryBudget_Buffers(t *testing.T) {
	def := maincontrol.Config{}
	assert.Equal(t, int64(128<<20+16<<20), budgetOf(t, def, "unsent output"))
	assert.Equal(t, int64(128<<20), budgetOf(t, def, "input of paused"))
	assert.Equal(t, int64(64<<20), budgetOf(t, def, "incomplete frames"))

	small := maincontrol.Config{MaxBuffers: 40 << 20}
	assert.Equal(t, int64(16<<20+16<<20), budgetOf(t, small, "unsent output"))
	assert.Equal(t, int64(16<<20), budgetOf(t, small, "input of paused"))
	assert.Equal(t, int64(8<<20), budgetOf(t, small, "incomplete frames"))

	noCap := maincontrol.Config{}
	noCap.Core.MaxPendingBytes = -1
	_, err := maincontrol.MemoryBudget(noCap)
	assert.ErrorContains(t, err, "--max-pending-bytes -1", "no cap, no bound: said so")
}

// A cluster leader under steady load writes its raft snapshot from a
// rebuilt copy of the state: the budget counts a second copy of the core's
// items. A single main control has none.
func TestMemoryBudget_ClusterSnapshotCopy(t *testing.T) {
	single, err := maincontrol.MemoryBudget(maincontrol.Config{})
	require.NoError(t, err)
	var core int64
	for _, it := range single {
		assert.NotContains(t, it.What, "cluster mode")
		if strings.HasPrefix(it.What, "connections:") {
			break
		}
		core += it.Bytes
	}
	cl := maincontrol.Config{RaftListen: "127.0.0.1:7001"}
	assert.Equal(t, core, budgetOf(t, cl, "cluster mode: a leader's raft snapshot"))
}
