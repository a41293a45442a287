package wire

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAppendUint(t *testing.T) {
	values := []uint64{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 65535, 1 << 32, 1e18 - 1, 1e18, 1e19 - 1, 1e19, math.MaxUint64}
	for p := uint64(1); p < 1e19; p *= 10 {
		values = append(values, p-1, p, p+1)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		values = append(values, r.Uint64()>>r.UintN(64))
	}
	for _, v := range values {
		want := "x=" + strconv.FormatUint(v, 10)
		for _, spare := range []int{0, 1, 32} {
			dst := append(make([]byte, 0, 2+spare), "x="...)
			require.Equal(t, want, string(appendUint(dst, v)), "%d, %d spare bytes", v, spare)
		}
	}
}

func BenchmarkAppendUint(b *testing.B) {
	buf := make([]byte, 0, 64)
	for _, v := range []uint64{7, 1234567} {
		b.Run(strconv.FormatUint(v, 10), func(b *testing.B) {
			b.Run("strconv", func(b *testing.B) {
				for b.Loop() {
					buf = strconv.AppendUint(buf[:0], v, 10)
				}
			})
			b.Run("appendUint", func(b *testing.B) {
				for b.Loop() {
					buf = appendUint(buf[:0], v)
				}
			})
		})
	}
}
