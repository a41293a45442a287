package snapshot_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// endingSource is a kvSource whose ranges are settled once done says so,
// changed or not: the main control's tasks, once every one has ended.
type endingSource struct {
	*kvSource
	done bool
}

func (e endingSource) Ranges(fn func(r uint64, live int, changed, settled bool)) {
	e.kvSource.Ranges(func(r uint64, live int, changed, _ bool) {
		fn(r, live, changed, e.done && (r+1)<<e.cur.bits <= e.cur.nextKey)
	})
}

// A range that settles with a quarter of it in deltas is rewritten whole
// by the snapshot it settles in, its last changes with it, and the next
// snapshot writes nothing of it: not a delta of the last changes, then a
// whole rewrite one snapshot later.
func TestIncremental_SettlingRangeRewrittenOnce(t *testing.T) {
	opts, _ := testOptions(t.TempDir())
	cur := newKV(6) // 64 keys a range
	for range 64 {
		cur.entries[cur.nextKey] = strings.Repeat("p", 100) // pending
		cur.nextKey++
	}
	w := startIncr(t, opts)
	defer w.close()
	write := func(done bool) uint64 {
		t.Helper()
		before := writtenBytes(w.s)
		lsn := appendN(t, w.s, 1)
		waitDurable(t, w.s, lsn)
		src := endingSource{&kvSource{cur: cur, prev: w.prev, base: w.base}, done}
		require.NoError(t, w.s.WriteIncremental(lsn, src))
		w.prev, w.base = cur.clone(), lsn
		return writtenBytes(w.s) - before
	}
	write(false)
	end := func(from, to uint64) {
		for k := from; k < to; k++ {
			cur.entries[k] = strings.Repeat("e", 100) // ended
		}
	}
	end(1, 40) // range 0 (keys 1 - 63): 39 of 63 ended, in a delta
	delta := write(false)
	require.Less(t, delta, uint64(40*140), "a delta of the ended ones")
	end(40, 64) // the rest of range 0 and key 64 end: all settled
	settling := write(true)
	require.Greater(t, settling, uint64(63*100), "range 0 rewritten whole as it settles")
	after := write(true)
	require.Less(t, after, uint64(1024), "nothing left to rewrite: %d bytes", after)
	got, _ := loadKV(t, opts)
	require.Equal(t, cur.want(), got, fmt.Sprint("bytes ", delta, " ", settling, " ", after))
}
