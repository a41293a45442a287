//go:build !unix

package core

import "time"

// cpuTime is not measured here: benchmarks report 0 CPU ns/op.
func cpuTime() time.Duration { return 0 }
