package snapshot_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

// BenchmarkIncremental_Million reports the snapshot bytes written after 100
// changes to a state of 1,000,000 entries of 200 bytes, in 1,024-key
// ranges as the main control's: FIFO (the oldest changes twice, as a
// dispatch then a result, and new keys come) and scattered (random keys
// change; on 100,000 entries, so that the 300 snapshots it takes to
// reach the cap on parts run in minutes). Each op is one snapshot: run
// fifo with -benchtime=20x, scattered with -benchtime=300x.
func BenchmarkIncremental_Million(b *testing.B) {
	for _, mode := range []string{"fifo", "scattered"} {
		b.Run(mode, func(b *testing.B) {
			n := 1_000_000
			if mode == "scattered" {
				n = 100_000
			}
			opts := snapshot.Options{Dir: b.TempDir(), Logger: slog.New(slog.DiscardHandler)}
			cur := newKV(10)
			v := strings.Repeat("p", 200)
			for range n {
				cur.entries[cur.nextKey] = v
				cur.nextKey++
			}
			w := startIncr(b, opts)
			defer w.close()
			require.NoError(b, w.write(cur))
			rnd := rand.New(rand.NewPCG(1, 1))
			oldest := uint64(1)
			var total uint64
			b.ResetTimer()
			for i := range b.N {
				for j := range 100 {
					switch {
					case mode == "scattered":
						k := 1 + rnd.Uint64N(cur.nextKey-1)
						if _, ok := cur.entries[k]; ok {
							cur.entries[k] = fmt.Sprint(v, i, j)
						}
					case j%3 == 0: // a submit
						cur.entries[cur.nextKey] = v
						cur.nextKey++
					case j%3 == 1: // a dispatch of the oldest pending
						cur.entries[oldest] = v + "d"
					default: // its result
						cur.entries[oldest] = v + "r"
						oldest++
					}
				}
				before := writtenBytes(w.s)
				require.NoError(b, w.write(cur))
				total += writtenBytes(w.s) - before
			}
			b.ReportMetric(float64(total)/float64(b.N), "snapshot-bytes/op")
		})
	}
}
