package bench

import (
	"math"
	"math/bits"
	"time"
)

// Histogram records durations in nanoseconds with three significant digits,
// in the log-linear layout of HdrHistogram: values below 2,048 ns are kept
// exactly; above that, each power-of-two range is cut into 1,024 equal
// sub-buckets, so a recorded value is known to within 1/1,024 (about 0.1%)
// of itself. Values above MaxTrackable are clamped to it. Recording is a
// few shifts and an increment, with no allocation.
//
// A Histogram is not safe for concurrent use: give each goroutine its own
// and Merge them at the end.
type Histogram struct {
	counts []uint64
	total  uint64
	min    int64
	max    int64
	sum    float64
}

const (
	subBucketHalfMag = 10                    // 1,024 sub-buckets per half
	subBucketCount   = 2 << subBucketHalfMag // 2,048
	subBucketHalf    = subBucketCount / 2
	subBucketMask    = subBucketCount - 1
	// histBuckets power-of-two buckets cover up to 2^(histBuckets+10) ns.
	histBuckets = 33
)

// MaxTrackable is the largest value a Histogram tells apart (about 2.4 h).
const MaxTrackable = int64(subBucketCount)<<(histBuckets-1) - 1

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{counts: make([]uint64, (histBuckets+1)*subBucketHalf), min: math.MaxInt64}
}

// index returns the counts slot of v (0 <= v <= MaxTrackable).
func index(v int64) int {
	bucket := 64 - bits.LeadingZeros64(uint64(v)|subBucketMask) - (subBucketHalfMag + 1)
	sub := int(v >> uint(bucket))
	return (bucket+1)<<subBucketHalfMag + sub - subBucketHalf
}

// lowest returns the smallest value that lands in slot i.
func lowest(i int) int64 {
	bucket := i>>subBucketHalfMag - 1
	sub := i&(subBucketHalf-1) + subBucketHalf
	if bucket < 0 {
		bucket, sub = 0, sub-subBucketHalf
	}
	return int64(sub) << uint(bucket)
}

// highest returns the largest value that lands in slot i.
func highest(i int) int64 {
	bucket := max(i>>subBucketHalfMag-1, 0)
	return lowest(i) + int64(1)<<uint(bucket) - 1
}

// Record adds one value in nanoseconds; negative values count as 0.
func (h *Histogram) Record(ns int64) {
	ns = min(max(ns, 0), MaxTrackable)
	h.counts[index(ns)]++
	h.total++
	h.sum += float64(ns)
	h.min = min(h.min, ns)
	h.max = max(h.max, ns)
}

// RecordDuration adds one duration.
func (h *Histogram) RecordDuration(d time.Duration) { h.Record(int64(d)) }

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.total == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.sum += o.sum
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// Count returns how many values were recorded.
func (h *Histogram) Count() uint64 { return h.total }

// Max returns the largest value recorded, exactly (0 when empty).
func (h *Histogram) Max() int64 {
	if h.total == 0 {
		return 0
	}
	return h.max
}

// Min returns the smallest value recorded, exactly (0 when empty).
func (h *Histogram) Min() int64 {
	if h.total == 0 {
		return 0
	}
	return h.min
}

// Mean returns the average value (0 when empty).
func (h *Histogram) Mean() float64 {
	if h.total == 0 {
		return 0
	}
	return h.sum / float64(h.total)
}

// Percentile returns the value below or at which p percent of the recorded
// values fall (0 < p <= 100): the highest value equivalent to the rank
// ceil(p/100 * count), never above the exact maximum. It is 0 when empty.
func (h *Histogram) Percentile(p float64) int64 {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p / 100 * float64(h.total)))
	rank = min(max(rank, 1), h.total)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(highest(i), h.max)
		}
	}
	return h.max
}

// Summary is a histogram's headline numbers, in milliseconds.
type Summary struct {
	Count uint64  `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
	Mean  float64 `json:"mean_ms"`
}

// Summarize returns the percentiles the reports print.
func (h *Histogram) Summarize() Summary {
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	return Summary{Count: h.total, P50: ms(h.Percentile(50)), P90: ms(h.Percentile(90)),
		P99: ms(h.Percentile(99)), P999: ms(h.Percentile(99.9)), Max: ms(h.Max()), Mean: h.Mean() / 1e6}
}
