package reliability_test

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apollo11/apollo11/internal/testbin"
)

var (
	soak        = flag.Bool("soak", false, "long runs: 200 kill rounds, 1,000,000 frames, 10,000 connections, ...")
	figuresPath = flag.String("figures", "", "also write the figures table as Markdown to this file")
)

// scale holds the counts of one mode.
type scale struct {
	mode           string
	killRounds     int // kill -9 of the main control
	execKillRounds int // kill -9 of an executor
	stopRounds     int // SIGSTOP of an executor
	staleTasks     int // raw executor results made stale
	resets         int // connections reset mid-frame
	slowloris      int // slow peers of each kind
	conns          int // connections opened and dropped
	frames         int // random and mutated frames
	authAttempts   int // wrong auth attempts
	diskFullRounds int // fill and heal cycles
	snapKillRounds int // kill -9 of the main control while it snapshots
	runKillRounds  int // kill -9 of the main control while pipeline runs go
}

func currentScale() scale {
	switch {
	case *soak:
		return scale{mode: "soak", killRounds: 200, execKillRounds: 30, stopRounds: 10, staleTasks: 200,
			resets: 20_000, slowloris: 1_000, conns: 10_000, frames: 1_000_000, authAttempts: 50_000, diskFullRounds: 10,
			snapKillRounds: 60, runKillRounds: 30}
	case raceEnabled:
		return scale{mode: "short, -race", killRounds: 6, execKillRounds: 2, stopRounds: 1, staleTasks: 10,
			resets: 500, slowloris: 100, conns: 2_000, frames: 10_000, authAttempts: 1_000, diskFullRounds: 2,
			snapKillRounds: 3, runKillRounds: 2}
	default:
		return scale{mode: "short", killRounds: 12, execKillRounds: 3, stopRounds: 1, staleTasks: 20,
			resets: 2_000, slowloris: 300, conns: 10_000, frames: 50_000, authAttempts: 5_000, diskFullRounds: 2,
			snapKillRounds: 6, runKillRounds: 4}
	}
}

func TestMain(m *testing.M) {
	flag.Parse()
	start := time.Now()
	code := testbin.Main(m)
	if figures.empty() && attackRows.empty() {
		os.Exit(code)
	}
	sc := currentScale()
	header := fmt.Sprintf("mode %s, %s/%s, %d CPUs, %s, took %s", sc.mode, runtime.GOOS, runtime.GOARCH,
		runtime.NumCPU(), runtime.Version(), time.Since(start).Round(time.Second))
	var tables []string
	if !figures.empty() {
		tables = append(tables, figures.markdown())
	}
	if !attackRows.empty() {
		tables = append(tables, attackRows.markdown())
	}
	table := strings.Join(tables, "\n")
	fmt.Printf("\nreliability figures (%s)\n\n%s\n", header, table)
	if *figuresPath != "" {
		if err := os.WriteFile(*figuresPath, []byte("<!-- "+header+" -->\n\n"+table), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "cannot write figures:", err)
			code = 1
		}
	}
	os.Exit(code)
}
