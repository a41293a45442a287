package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
)

// The caps of what peers can make the core hold (--max-pending-per-conn,
// --max-task-types, --max-kept-executors) reach the core's Config from
// the command line or their variables, and bad values are refused.
func TestMaincontrolFlags_PeerCaps(t *testing.T) {
	for _, cap := range []struct {
		flag, env string
		def       int
		zero      string // the error for 0; "" when 0 is allowed
		got       func(maincontrol.Config) int
	}{
		{"max-pending-per-conn", "APOLLO11_MAX_PENDING_PER_CONN", 0, "",
			func(c maincontrol.Config) int { return c.Core.MaxPendingPerConn }},
		{"max-task-types", "APOLLO11_MAX_TASK_TYPES", core.DefaultMaxTaskTypes, "--max-task-types 0: must be more than 0",
			func(c maincontrol.Config) int { return c.Core.MaxTaskTypes }},
		{"max-kept-executors", "APOLLO11_MAX_KEPT_EXECUTORS", core.DefaultMaxKeptExecutors, "--max-kept-executors 0: must be more than 0",
			func(c maincontrol.Config) int { return c.Core.MaxKeptExecutors }},
	} {
		for _, tc := range []struct {
			name string
			env  string
			args []string
			want int
			err  string
		}{
			{name: "default", want: cap.def},
			{name: "flag", args: []string{"--" + cap.flag, "1000"}, want: 1000},
			{name: "environment", env: "2048", want: 2048},
			{name: "negative", args: []string{"--" + cap.flag + "=-1"}, err: "--" + cap.flag + " -1"},
			{name: "zero", args: []string{"--" + cap.flag, "0"}, err: cap.zero},
		} {
			t.Run(cap.flag+"/"+tc.name, func(t *testing.T) {
				if cfg, ok := configCase(t, cap.env, tc.env, tc.args, tc.err); ok {
					assert.Equal(t, tc.want, cap.got(cfg))
				}
			})
		}
	}
}

// --snapshot-duty reaches the Config from the command line or its
// variable; values outside [0.05, 1] are refused.
func TestMaincontrolFlags_SnapshotDuty(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		args []string
		want float64
		err  string
	}{
		{name: "default", want: maincontrol.DefaultSnapshotDuty},
		{name: "flag", args: []string{"--snapshot-duty", "1"}, want: 1},
		{name: "environment", env: "0.5", want: 0.5},
		{name: "zero", args: []string{"--snapshot-duty", "0"}, err: "--snapshot-duty 0: want a number from 0.05 to 1"},
		{name: "under the floor", args: []string{"--snapshot-duty", "0.001"}, err: "--snapshot-duty 0.001: want a number from 0.05 to 1"},
		{name: "the floor", args: []string{"--snapshot-duty", "0.05"}, want: 0.05},
		{name: "over one", args: []string{"--snapshot-duty", "1.5"}, err: "--snapshot-duty 1.5: want a number from 0.05 to 1"},
		{name: "not a number", args: []string{"--snapshot-duty", "NaN"}, err: "--snapshot-duty NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if cfg, ok := configCase(t, "APOLLO11_SNAPSHOT_DUTY", tc.env, tc.args, tc.err); ok {
				assert.Equal(t, tc.want, cfg.SnapshotDuty)
			}
		})
	}
}

// maincontrolConfig parses args as the maincontrol command's flags and
// makes its Config, its logs dropped.
func maincontrolConfig(t *testing.T, args ...string) (maincontrol.Config, error) {
	t.Helper()
	fs := newFlagSet("maincontrol", "maincontrol", io.Discard)
	var f maincontrolFlags
	f.register(fs)
	require.NoError(t, parseFlags(fs, args))
	return f.config(io.Discard)
}

// configCase sets the variable env to val (unless val is ""), makes the
// Config from args and checks the error against wantErr ("": none). It
// returns the Config, and whether there is one to check.
func configCase(t *testing.T, env, val string, args []string, wantErr string) (maincontrol.Config, bool) {
	t.Helper()
	if val != "" {
		t.Setenv(env, val)
	}
	cfg, err := maincontrolConfig(t, args...)
	if wantErr != "" {
		require.Error(t, err)
		assert.Contains(t, err.Error(), wantErr)
		return cfg, false
	}
	require.NoError(t, err)
	return cfg, true
}
