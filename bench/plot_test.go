package bench_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/bench"
)

// sampleReport is a report with every series filled in.
func sampleReport() *bench.Report {
	r := &bench.Report{Setup: "4 producers, 8 raw executors x 256 slots <&>", Loop: "open", Rate: 5000,
		Completed: 10_000, Throughput: 4999.5, Elapsed: 2.4,
		AckHist: bench.NewHistogram(), DispatchHist: bench.NewHistogram(), DoneHist: bench.NewHistogram()}
	for i := range int64(10_000) {
		r.AckHist.Record(50_000 + i*10)
		r.DispatchHist.Record(80_000 + i*20)
		r.DoneHist.Record(150_000 + i*i)
	}
	r.Timeline = []bench.Second{{T: 0, Submitted: 5000, Done: 4900}, {T: 1, Submitted: 5000, Done: 5000}, {T: 2, Submitted: 2000, Done: 2100}}
	return r
}

func TestPlotSVG_WellFormed(t *testing.T) {
	for name, r := range map[string]*bench.Report{"full": sampleReport(), "empty": {}} {
		t.Run(name, func(t *testing.T) {
			svg := bench.PlotSVG(r)
			dec := xml.NewDecoder(bytes.NewReader(svg))
			var root string
			elems := 0
			for {
				tok, err := dec.Token()
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				if se, ok := tok.(xml.StartElement); ok {
					if root == "" {
						root = se.Name.Local
					}
					elems++
				}
			}
			assert.Equal(t, "svg", root)
			assert.Greater(t, elems, 20)
			assert.NotContains(t, string(svg), "NaN")
			assert.NotContains(t, string(svg), "Inf")
		})
	}
}

func TestWritePlotFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, bench.WritePlotFile(filepath.Join(dir, "a.svg"), sampleReport()))
	require.NoError(t, bench.WritePlotFile(filepath.Join(dir, "b.SVG"), sampleReport()))
	assert.ErrorContains(t, bench.WritePlotFile(filepath.Join(dir, "a.png"), sampleReport()), "--plot "+filepath.Join(dir, "a.png")+": want a .svg file")
	assert.Error(t, bench.WritePlotFile(filepath.Join(dir, "a.jpg"), sampleReport()))
	b, err := os.ReadFile(filepath.Join(dir, "a.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `<svg xmlns="http://www.w3.org/2000/svg" width="960"`)
}

// A run shorter than about a second has one point of throughput, which
// draws no line: the panel says why it is empty instead of showing empty
// axes.
func TestPlot_ShortRunNote(t *testing.T) {
	short := sampleReport()
	short.Elapsed = 0.2
	short.Timeline = []bench.Second{{T: 0, Submitted: 20_000, Done: 20_000}}
	assert.Contains(t, bench.ShortRunNote(short), "run of 0.20 s: too short for throughput over time")
	assert.Contains(t, string(bench.PlotSVG(short)), "too short for throughput over time")
	assert.Empty(t, bench.ShortRunNote(sampleReport()))
	assert.NotContains(t, string(bench.PlotSVG(sampleReport())), "too short")
	// 1.1 s has two one-second points, the second over a tenth of a
	// second: too little to count, so still no line; 1.3 s draws one.
	// The note and the panel agree (the CLI prints the note).
	for _, tc := range []struct {
		elapsed float64
		note    bool
	}{{1.1, true}, {1.3, false}} {
		r := sampleReport()
		r.Elapsed = tc.elapsed
		r.Timeline = []bench.Second{{T: 0, Submitted: 1000, Done: 1000}, {T: 1, Submitted: 100, Done: 100}}
		assert.Equal(t, tc.note, bench.ShortRunNote(r) != "", "%.1f s", tc.elapsed)
		assert.Equal(t, tc.note, strings.Contains(string(bench.PlotSVG(r)), "too short"), "%.1f s", tc.elapsed)
	}
}
