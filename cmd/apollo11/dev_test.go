package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/internal/testbin"
	"github.com/apollo11/apollo11/maincontrol"
)

// dev checks its own flags, and names them, before the main control
// starts: --executor-slots 0 said "--slots 0" (a flag dev does not have)
// after the main control had created the data dir and was listening.
func TestDev_FlagsCheckedBeforeStart(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--executor-slots", "0"}, "apollo11 dev: --executor-slots 0: want 1 to 65536\n"},
		{[]string{"--executor-slots", "-1"}, "--executor-slots -1: want 1 to 65536"},
		{[]string{"--executor-slots", "65537"}, "--executor-slots 65537: want 1 to 65536"},
		{[]string{"--listen", "127.0.0.1:0"}, `--listen "127.0.0.1:0": port "0" is not a number from 1 to 65535: dev's executors dial it`},
		{[]string{"--cluster", "10"}, "--cluster 10: want 1 to 9 members"},
		{[]string{"--cluster", "-1"}, "--cluster -1: want 1 to 9 members"},
		{[]string{"--cluster", "3", "--listen", "127.0.0.1:65534"}, "--cluster 3: the ports from 65534 and 66534 do not fit below 65536"},
		{[]string{"--cluster", "3", "--raft-listen", "127.0.0.1"}, `--raft-listen "127.0.0.1"`},
		{[]string{"--cluster", "3", "--advertise", "127.0.0.1:5999"}, "--advertise names one cluster member"},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		var out, errOut bytes.Buffer
		// A free port first: were a check missing, dev must not take 1969.
		args := append([]string{"dev", "--data-dir", dir, "--listen", testbin.FreeAddr(t)}, tc.args...)
		rc := run(args, &out, &errOut)
		assert.Equal(t, 2, rc, "%v: %s", tc.args, errOut.String())
		assert.Contains(t, errOut.String(), tc.err, "%v", tc.args)
		assert.NotContains(t, errOut.String(), "--slots", "%v", tc.args)
		assert.NotContains(t, errOut.String(), "main control ready", "%v: checked before the start", tc.args)
		_, err := os.Stat(dir)
		require.True(t, os.IsNotExist(err), "%v: the data dir was created: %v", tc.args, err)
	}
}

// dev --cluster 3 makes three members from one main control's settings:
// consecutive ports, Raft ports 1000 above unless --raft-listen says,
// a data dir each, the dashboard on the first only.
func TestDev_ClusterMembers(t *testing.T) {
	cfg := maincontrol.Config{Listen: "tcp://127.0.0.1:1969", DataDir: "d", HTTPListen: "127.0.0.1:9169"}
	cfgs, err := devMembers(cfg, 3)
	require.NoError(t, err)
	require.Len(t, cfgs, 3)
	want := []cluster.Member{{ID: "127.0.0.1:1969", Raft: "127.0.0.1:2969", Voter: true},
		{ID: "127.0.0.1:1970", Raft: "127.0.0.1:2970", Voter: true}, {ID: "127.0.0.1:1971", Raft: "127.0.0.1:2971", Voter: true}}
	for i, c := range cfgs {
		assert.Equal(t, want[i].ID, c.Listen)
		assert.Equal(t, want[i].Raft, c.RaftListen)
		assert.Equal(t, want, c.ClusterMembers)
		assert.Equal(t, fmt.Sprintf("d-cluster/%d", i+1), c.DataDir)
		assert.Equal(t, i == 0, c.HTTPListen != "", "the dashboard on the first member only")
	}
	cfg.RaftListen = "127.0.0.1:7000"
	cfgs, err = devMembers(cfg, 2)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:7001", cfgs[1].RaftListen)
	one, err := devMembers(cfg, 0)
	require.NoError(t, err)
	assert.Equal(t, []maincontrol.Config{cfg}, one, "no --cluster: the one main control as it was")
	cfg.DataDir = ""
	_, err = devMembers(cfg, 3)
	assert.ErrorContains(t, err, "--cluster needs a --data-dir")
}
