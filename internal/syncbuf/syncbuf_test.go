package syncbuf

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBuffer_ConcurrentWrites: writers on many goroutines, read while they
// write (run with -race), lose nothing.
func TestBuffer_ConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				_, _ = b.Write([]byte("x\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 8000, strings.Count(b.String(), "x\n"))
}
