package bench_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/bench"
)

// exactPercentile is the nearest-rank percentile of sorted values.
func exactPercentile(sorted []int64, p float64) int64 {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

func TestHistogram_Percentile(t *testing.T) {
	tests := []struct {
		name string
		gen  func(r *rand.Rand) int64
	}{
		{"small exact values", func(r *rand.Rand) int64 { return r.Int64N(2048) }},
		{"microseconds", func(r *rand.Rand) int64 { return 1_000 + r.Int64N(1_000_000) }},
		{"log-uniform ns to minutes", func(r *rand.Rand) int64 { return int64(math.Exp(r.Float64() * math.Log(6e10))) }},
		{"one huge outlier", func(r *rand.Rand) int64 {
			if r.IntN(1000) == 0 {
				return 3_000_000_000
			}
			return 50_000 + r.Int64N(1000)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			h := bench.NewHistogram()
			vals := make([]int64, 20_000)
			for i := range vals {
				vals[i] = tt.gen(r)
				h.Record(vals[i])
			}
			slices.Sort(vals)
			require.EqualValues(t, len(vals), h.Count())
			assert.Equal(t, vals[0], h.Min())
			assert.Equal(t, vals[len(vals)-1], h.Max())
			for _, p := range []float64{0.1, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100} {
				want := exactPercentile(vals, p)
				got := h.Percentile(p)
				// Three significant digits: within 1/1024 of the value, and
				// never below it (a bucket reports its highest value).
				assert.GreaterOrEqual(t, got, want, "p%v", p)
				assert.LessOrEqual(t, float64(got-want), float64(want)/1024+1, "p%v: got %d want %d", p, got, want)
			}
		})
	}
}

func TestHistogram_EdgeCases(t *testing.T) {
	h := bench.NewHistogram()
	assert.Zero(t, h.Percentile(50), "empty")
	assert.Zero(t, h.Max())
	assert.Zero(t, h.Mean())
	h.Record(-5)
	assert.Zero(t, h.Max(), "negative counts as 0")
	h.Record(bench.MaxTrackable * 2)
	assert.Equal(t, bench.MaxTrackable, h.Max(), "clamped")
	assert.Equal(t, bench.MaxTrackable, h.Percentile(100))
}

func TestHistogram_Merge(t *testing.T) {
	a, b, all := bench.NewHistogram(), bench.NewHistogram(), bench.NewHistogram()
	for i := int64(1); i <= 10_000; i++ {
		v := i * 997
		all.Record(v)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	a.Merge(b)
	a.Merge(nil)
	assert.Equal(t, all.Count(), a.Count())
	assert.Equal(t, all.Min(), a.Min())
	assert.Equal(t, all.Max(), a.Max())
	assert.InDelta(t, all.Mean(), a.Mean(), 1e-6)
	for _, p := range []float64{1, 50, 99, 99.9} {
		assert.Equal(t, all.Percentile(p), a.Percentile(p))
	}
	s := a.Summarize()
	assert.InDelta(t, float64(a.Percentile(99))/1e6, s.P99, 1e-12)
}

func BenchmarkHistogram_Record(b *testing.B) {
	h := bench.NewHistogram()
	b.ReportAllocs()
	for i := range b.N {
		h.Record(int64(i) * 7919)
	}
}
