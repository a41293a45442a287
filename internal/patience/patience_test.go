package patience

import (
	"testing"
	"time"
)

func TestMeasure(t *testing.T) {
	load := func(l float64, ok bool) func() (float64, bool) {
		return func() (float64, bool) { return l, ok }
	}
	tests := []struct {
		name     string
		override string
		load     func() (float64, bool)
		cpus     int
		want     float64
	}{
		{"idle", "", load(0, true), 2, 1},
		{"load per cpu", "", load(20, true), 2, 11},
		{"capped", "", load(400, true), 2, MaxFactor},
		{"no loadavg", "", load(0, false), 2, 1},
		{"override", "3", load(20, true), 2, 3},
		{"override capped", "1000", load(0, true), 2, MaxFactor},
		{"bad override falls back to load", "fast", load(2, true), 2, 2},
		{"override below one ignored", "0.5", load(0, true), 2, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := measure(tc.override, tc.load, tc.cpus); got != tc.want {
				t.Errorf("measure = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestScale_NeverShrinks(t *testing.T) {
	if got := Scale(time.Second); got < time.Second {
		t.Errorf("Scale(1s) = %v, shorter than asked", got)
	}
}
