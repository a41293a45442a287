package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The read-only getters change nothing, not even mid-recovery: rebuilding
// the indexes of a loaded snapshot is recovery's work (ReplayRecord,
// Recovered), not a side effect of a read.
func TestCore_GettersArePure(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetrying = 1 })
	richState(t, h)
	c := h.loaded(snapshotEntries(t, h.c), nil)
	require.True(t, c.loading)

	_, ok := c.Task(5)
	assert.True(t, ok)
	assert.Equal(t, h.c.Counts(), c.Counts())
	assert.NotEmpty(t, c.Executors())
	assert.True(t, c.loading, "a getter rebuilt the indexes")
	assert.Zero(t, c.pendingBytes+c.retainedBytes, "a getter counted the tasks' bytes")
	assert.Zero(t, c.armed, "a getter counted the armed retries")

	c.Recovered()
	assert.False(t, c.loading)
	assert.Equal(t, h.c.pendingBytes, c.pendingBytes)
}
