package main

import (
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every duration flag takes the same least value (1ms: --heartbeat-interval
// 1ns was refused while --start-timeout 1ns was taken and rounded), every
// keyword flag takes any case (--log-level DEBUG was taken, --log-format
// JSON and --fsync ALWAYS refused), and --event-loops stops where gnet
// does (256; it quietly ran 256 for 100000).
func TestDaemonFlags_Consistent(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
		err  string // "": accepted
	}{
		{"maincontrol", []string{"--handshake-timeout", "1ns"}, "--handshake-timeout 1ns: below 1ms, the least any duration flag of the daemons takes"},
		{"maincontrol", []string{"--heartbeat-interval", "1ns"}, "--heartbeat-interval 1ns: below 1ms, the least any duration flag of the daemons takes"},
		{"maincontrol", []string{"--heartbeat-interval", "-1s"}, "--heartbeat-interval -1s: below 1ms, the least any duration flag of the daemons takes"},
		{"maincontrol", []string{"--heartbeat-timeout", "999us"}, "--heartbeat-timeout 999µs: below 1ms, the least any duration flag of the daemons takes"},
		{"maincontrol", []string{"--start-timeout", "1ns"}, "--start-timeout 1ns: below 1ms, the least any duration flag of the daemons takes"},
		{"maincontrol", []string{"--retention", "1ns"}, "--retention 1ns: below 1ms, the least any duration flag of the daemons takes"},
		{"maincontrol", []string{"--fsync-interval", "500us"}, "--fsync-interval 500µs: below 1ms, the least any duration flag of the daemons takes"},
		{"maincontrol", []string{"--snapshot-interval", "1ns"}, "--snapshot-interval 1ns: below 1ms, the least any duration flag of the daemons takes"},
		{"maincontrol", []string{"--start-timeout", "1ms"}, ""},
		{"maincontrol", []string{"--fsync-interval", "1.5ms"}, ""},
		{"maincontrol", []string{"--heartbeat-interval", "0"}, ""},
		{"executor", []string{"--drain-timeout", "1ns"}, "--drain-timeout 1ns: below 1ms, the least any duration flag of the daemons takes"},
		{"executor", []string{"--drain-timeout", "1ms"}, ""},

		{"maincontrol", []string{"--log-level", "DEBUG"}, ""},
		{"maincontrol", []string{"--log-level", "Info"}, ""},
		{"maincontrol", []string{"--log-format", "JSON"}, ""},
		{"maincontrol", []string{"--log-format", "Text"}, ""},
		{"maincontrol", []string{"--log-format", "XML"}, `--log-format "XML": want text or json`},
		{"maincontrol", []string{"--fsync", "ALWAYS"}, ""},
		{"maincontrol", []string{"--fsync", "Batch"}, ""},
		{"executor", []string{"--log-format", "JSON"}, ""},

		{"maincontrol", []string{"--event-loops", "256"}, ""},
		{"maincontrol", []string{"--event-loops", "257"}, "--event-loops 257: want 1 to 256 (gnet runs at most 256)"},
		{"maincontrol", []string{"--event-loops", "100000"}, "--event-loops 100000: want 1 to 256 (gnet runs at most 256)"},
	} {
		fs := newFlagSet(tc.cmd, tc.cmd, io.Discard)
		var err error
		switch tc.cmd {
		case "maincontrol":
			var f maincontrolFlags
			f.register(fs)
			if !assert.NoError(t, parseFlags(fs, tc.args)) {
				continue
			}
			_, err = f.config(io.Discard)
		case "executor":
			var f executorFlags
			f.register(fs)
			if !assert.NoError(t, parseFlags(fs, tc.args)) {
				continue
			}
			var l *slog.Logger
			if l, err = f.log.logger(io.Discard); err == nil {
				_, err = f.config(l)
			}
		}
		if tc.err == "" {
			assert.NoError(t, err, "%s %v", tc.cmd, tc.args)
		} else {
			assert.EqualError(t, err, tc.err, "%s %v", tc.cmd, tc.args)
		}
	}
}
