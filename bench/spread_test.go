package bench

import "testing"

// The failover median of an even number of rounds is the mean of the two
// middle ones, not the upper (which made the median of 2 rounds its max).
func TestSpread(t *testing.T) {
	tests := []struct {
		xs          []float64
		lo, med, hi float64
	}{
		{[]float64{5}, 5, 5, 5},
		{[]float64{3, 1}, 1, 2, 3},
		{[]float64{4, 1, 3}, 1, 3, 4},
		{[]float64{10, 1, 4, 2}, 1, 3, 10},
		{[]float64{2, 2, 9, 2, 2}, 2, 2, 9},
	}
	for _, tc := range tests {
		lo, med, hi := spread(tc.xs)
		if lo != tc.lo || med != tc.med || hi != tc.hi {
			t.Errorf("spread(%v) = %v, %v, %v; want %v, %v, %v", tc.xs, lo, med, hi, tc.lo, tc.med, tc.hi)
		}
	}
}
