package main_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/testbin"
)

// startCluster runs n members of the real binary, each with its own data
// dir, and returns their client addresses and processes by address.
func startCluster(t *testing.T, bin string, n int) ([]string, map[string]*testbin.Proc) {
	t.Helper()
	addrs, rafts := make([]string, n), make([]string, n)
	var members []string
	for i := range n {
		addrs[i], rafts[i] = testbin.FreeAddr(t), testbin.FreeAddr(t)
		members = append(members, addrs[i]+"="+rafts[i])
	}
	dir := t.TempDir()
	procs := make(map[string]*testbin.Proc, n)
	for i := range n {
		procs[addrs[i]] = testbin.StartMaincontrolEnv(t, bin, nil, addrs[i], append([]string{
			"--data-dir", filepath.Join(dir, fmt.Sprint(i)), "--raft-listen", rafts[i],
			"--cluster-members", strings.Join(members, ","), "--fsync", "never"}, testbin.LoadedRaft()...)...)
	}
	return addrs, procs
}

// A Go client and an executor daemon, given every member, follow the
// leader through a kill -9 of it: a keyed submit made after the kill is
// served by the new leader and run by the executor, which registered
// there listing the task it was running; that task ends once.
func TestCluster_ClientAndExecutorFollowLeaderKill(t *testing.T) {
	bin := testbin.Build(t)
	addrs, procs := startCluster(t, bin, 3)
	list := strings.Join(addrs, ",")
	ex := startExecutor(t, bin, list, "--types", "echo,sleep", "--slots", "2")

	wait := patience.Scale(30 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := client.Dial(ctx, "", client.Options{Addrs: addrs, DialTimeout: wait,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer c.Close()

	_, d, err := c.SubmitWait(ctx, client.SubmitRequest{Type: "echo", Key: "before", Args: map[string]string{"m": "1"}})
	require.NoError(t, err)
	require.Equal(t, "succeeded", d.State)
	st, err := c.ClusterStatus(ctx)
	require.NoError(t, err)
	require.Equal(t, "leader", st.Role)
	leader := st.Leader
	require.Contains(t, addrs, leader)
	require.Len(t, st.Members, 3)

	sleeping, err := c.Submit(ctx, client.SubmitRequest{Type: "sleep", Key: "sleeping", Args: map[string]string{"ms": "1500"}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ts, err := c.Query(ctx, sleeping.ID)
		return err == nil && ts.State == "running"
	}, wait, 10*time.Millisecond)

	procs[leader].Kill()
	killed := time.Now()
	_, d, err = c.SubmitWait(ctx, client.SubmitRequest{Type: "echo", Key: "after", Args: map[string]string{"m": "2"}})
	require.NoError(t, err, "the client follows the new leader")
	assert.Equal(t, "succeeded", d.State, "the executor follows it too")
	t.Logf("a keyed submit ran to its end %v after the leader's kill -9", time.Since(killed).Round(time.Millisecond))

	d, err = c.Wait(ctx, sleeping.ID)
	require.NoError(t, err)
	assert.Equal(t, "succeeded", d.State)
	ts, err := c.Query(ctx, sleeping.ID)
	require.NoError(t, err)
	t.Logf("the task running at the kill: attempt %d, requeues %d", ts.Attempt, ts.Requeues)

	st, err = c.ClusterStatus(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, leader, st.Leader)
	assert.Contains(t, addrs, st.Leader)

	// The CLI, given the list with the dead member first, finds the leader.
	others := slices.DeleteFunc(slices.Clone(addrs), func(a string) bool { return a == leader })
	out, err := exec.Command(bin, "cluster", "status", "--addr", leader+","+strings.Join(others, ",")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "leader "+st.Leader)
	assert.Regexp(t, "member "+regexp.QuoteMeta(leader)+" .* unreachable", string(out), "the killed member is asked, and says so")
	assert.NotContains(t, ex.Output(), "ignoring a leader hint", "every hint named a member")
}

// freePorts returns a loopback port p such that p to p+n-1 were free a
// moment ago.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for range 100 {
		_, p, err := net.SplitHostPort(testbin.FreeAddr(t))
		require.NoError(t, err)
		port, _ := strconv.Atoi(p)
		if port+n > 65535 {
			continue
		}
		free := true
		for i := 1; i < n && free; i++ {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+i)))
			if free = err == nil; free {
				ln.Close()
			}
		}
		if free {
			return port
		}
	}
	t.Fatal("no run of free ports")
	return 0
}

// dev --cluster 3: one command runs three members and two executors that
// follow the leader; a submit given every member's address is served, and
// again after the leadership moved with cluster transfer-leadership.
func TestDev_Cluster3(t *testing.T) {
	bin := testbin.Build(t)
	port, raft := freePorts(t, 3), freePorts(t, 3)
	addrs := make([]string, 3)
	for i := range addrs {
		addrs[i] = "127.0.0.1:" + strconv.Itoa(port+i)
	}
	list := strings.Join(addrs, ",")
	dev := testbin.Start(t, bin, nil, "dev", "--cluster", "3", "--listen", addrs[0],
		"--raft-listen", "127.0.0.1:"+strconv.Itoa(raft), "--data-dir", filepath.Join(t.TempDir(), "d"))
	for _, a := range addrs {
		require.NoError(t, testbin.WaitWelcome(a, 20*time.Second, nil), dev.Output())
	}
	out, errOut, code := cli(t, bin, list, "submit", "--type", "echo", "--arg", "msg=hi", "--wait")
	require.Equal(t, 0, code, "%s%s\ndev output:\n%s", out, errOut, dev.Output())
	assert.Contains(t, out, "out.msg=hi\n")
	st, err := exec.Command(bin, "cluster", "status", "--addr", list).CombinedOutput()
	require.NoError(t, err, "%s", st)
	assert.Equal(t, 3, strings.Count(string(st), "\nmember "), "%s", st)
	// Raft tells the leader no follower's index: the CLI asks each one.
	assert.Len(t, regexp.MustCompile(`  applied_index \d+  lag \d+\n`).FindAllString(string(st), -1), 2, "%s", st)
	assert.Contains(t, dev.Output(), "cluster status --addr "+list)

	moved, err := exec.Command(bin, "cluster", "transfer-leadership", "--addr", list).CombinedOutput()
	require.NoError(t, err, "%s\ndev output:\n%s", moved, dev.Output())
	assert.Regexp(t, `^leader 127\.0\.0\.1:\d+ -> 127\.0\.0\.1:\d+ \(term \d+\)\n$`, string(moved))
	out, errOut, code = cli(t, bin, list, "submit", "--type", "echo", "--arg", "msg=again", "--wait")
	require.Equal(t, 0, code, "after the transfer: %s%s\ndev output:\n%s", out, errOut, dev.Output())
	dev.Signal(syscall.SIGTERM)
	require.NoError(t, dev.Wait(20*time.Second), "graceful stop exits 0\n%s", dev.Output())
}
