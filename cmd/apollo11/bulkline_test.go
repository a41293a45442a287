package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/client"
)

// A bulk command's totals read as English at one task too.
func TestBulkLine(t *testing.T) {
	assert.Equal(t, "1 task would be requeued\n", bulkLine(client.Matched{Count: 1, DryRun: true}, "requeued"))
	assert.Equal(t, "0 tasks cancelled\n", bulkLine(client.Matched{}, "cancelled"))
	assert.Equal(t, "2 tasks purged, 1 matched but skipped\n", bulkLine(client.Matched{Count: 2, Skipped: 1}, "purged"))
}
