package metrics_test

import (
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/metrics"
)

func TestRegistry_WriteTo(t *testing.T) {
	var r metrics.Registry
	c := r.Counter("jobs_total", "Jobs done.")
	r.GaugeFunc("queue", "Queue length.", func() float64 { return 7 })
	r.GaugeVecFunc("tasks", "Tasks by state.", "state", func() map[string]float64 {
		return map[string]float64{"running": 2, "pending": 1}
	})
	h := r.Histogram("wait_seconds", "Wait.", []float64{0.001, 0.01, 0.1})
	c.Add(3)
	for _, v := range []float64{0.0005, 0.005, 0.005, 5} {
		h.Observe(v)
	}
	var b strings.Builder
	_, err := r.WriteTo(&b)
	require.NoError(t, err)
	want := `# HELP jobs_total Jobs done.
# TYPE jobs_total counter
jobs_total 3
# HELP queue Queue length.
# TYPE queue gauge
queue 7
# HELP tasks Tasks by state.
# TYPE tasks gauge
tasks{state="pending"} 1
tasks{state="running"} 2
# HELP wait_seconds Wait.
# TYPE wait_seconds histogram
wait_seconds_bucket{le="0.001"} 1
wait_seconds_bucket{le="0.01"} 3
wait_seconds_bucket{le="0.1"} 3
wait_seconds_bucket{le="+Inf"} 4
wait_seconds_sum 5.0105
wait_seconds_count 4
`
	assert.Equal(t, want, b.String())
}

func TestHistogram_ConcurrentObserve(t *testing.T) {
	var r metrics.Registry
	h := r.Histogram("x", "x", []float64{1})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 1000; j++ {
				h.Observe(0.5)
			}
		}()
	}
	wg.Wait()
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	assert.Contains(t, rec.Body.String(), "x_count 8000\n")
	assert.Contains(t, rec.Body.String(), "x_sum 4000\n")
	assert.Equal(t, "text/plain; version=0.0.4; charset=utf-8", rec.Header().Get("Content-Type"))
}
