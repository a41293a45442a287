package footprint

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
)

// rssFile reads this process's resident file pages, in kB.
func rssFile(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			require.NoError(t, err)
			return kb
		}
	}
	t.Fatal("no RssFile")
	return 0
}

// Release unmaps pages of the binary, and the process goes on: its code
// and constants map back when used.
func TestRelease(t *testing.T) {
	before := rssFile(t)
	require.NoError(t, Release())
	after := rssFile(t)
	require.Less(t, after, before)
	require.NoError(t, Release(), "twice is fine")
}

func TestParseRange(t *testing.T) {
	s, e, ok := parseRange("00400000-008c0000")
	require.True(t, ok)
	require.Equal(t, uintptr(0x400000), s)
	require.Equal(t, uintptr(0x8c0000), e)
	for _, bad := range []string{"", "400000", "8c0000-400000", "x-y"} {
		_, _, ok := parseRange(bad)
		require.False(t, ok, bad)
	}
}

// A receive from now releases at once, long before the first wait ends.
func TestKeep_ReleasesWhenTold(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	now := make(chan struct{})
	reports := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Keep(ctx, time.Hour, time.Hour, now, func(err error) { reports <- err })
	}()
	now <- struct{}{}
	select {
	case err := <-reports:
		require.NoError(t, err)
	case <-time.After(patience.Scale(30 * time.Second)):
		t.Fatal("no release after a receive from now")
	}
	cancel()
	<-done
}
