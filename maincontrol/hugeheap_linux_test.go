package maincontrol

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestHugeHeap checks that the heap a restart fills next is advised for
// huge pages, and that the range is free for the state to take.
func TestHugeHeap(t *testing.T) {
	if !thpAdvised() {
		t.Skip("transparent huge pages are not \"madvise\" here")
	}
	const n = 128 << 20
	hugeHeap(n)
	// The state the restart builds lands in the advised range, all but
	// the part before the first huge page boundary.
	b := make([]byte, 8<<20)
	p := uintptr(unsafe.Pointer(&b[len(b)-1]))
	require.True(t, advisedHuge(t, p), "the next allocation is in a huge-page range")
	before := advisedBytes(t)
	require.GreaterOrEqual(t, before, int64(n-2*hugePage), "advised bytes")
	hugeHeap(minHugeHeap - 1)
	require.Equal(t, before, advisedBytes(t), "a small restart advises nothing")
}

// vmas calls fn with each mapping's range and VmFlags in /proc/self/smaps.
func vmas(t *testing.T, fn func(start, end uintptr, flags string)) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	require.NoError(t, err)
	var start, end uintptr
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "VmFlags:"); ok {
			fn(start, end, f)
			continue
		}
		r, _, _ := strings.Cut(line, " ")
		if a, z, ok := strings.Cut(r, "-"); ok {
			x, err1 := strconv.ParseUint(a, 16, 64)
			y, err2 := strconv.ParseUint(z, 16, 64)
			if err1 == nil && err2 == nil {
				start, end = uintptr(x), uintptr(y)
			}
		}
	}
	require.NoError(t, sc.Err())
}

func advisedHuge(t *testing.T, p uintptr) (in bool) {
	vmas(t, func(start, end uintptr, flags string) {
		in = in || (start <= p && p < end && strings.Contains(flags, " hg"))
	})
	return in
}

func advisedBytes(t *testing.T) (n int64) {
	vmas(t, func(start, end uintptr, flags string) {
		if strings.Contains(flags, " hg") {
			n += int64(end - start)
		}
	})
	return n
}
