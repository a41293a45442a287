package maincontrol_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/internal/tlsfiles/tlsfilestest"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

// TestTLS_ThreeMemberClusterOverMutualTLS: three members whose Raft
// traffic and main ports both run over mutual TLS. A client and an
// executor, given every member's address, find the leader and run a task.
func TestTLS_ThreeMemberClusterOverMutualTLS(t *testing.T) {
	ca := tlsfilestest.NewCA(t, "cluster CA")
	dir := t.TempDir()
	var members []cluster.Member
	var addrs []string
	for range 3 {
		members = append(members, cluster.Member{ID: freeAddr(t), Raft: freeAddr(t), Voter: true})
		addrs = append(addrs, members[len(members)-1].ID)
	}
	for i, m := range members {
		c, k := ca.Issue(tlsfilestest.Leaf{Name: fmt.Sprint("member", i)})
		files := tlsfiles.Files{Cert: c, Key: k, CA: ca.CAFile}
		maincontroltest.Start(t, maincontrol.LoadedRaft(maincontrol.Config{Listen: m.ID, DataDir: filepath.Join(dir, fmt.Sprint(i)),
			RaftListen: m.Raft, ClusterMembers: members, RaftTLS: files, TLS: files, Logger: testLogger()}))
	}
	pc, pk := ca.Issue(tlsfilestest.Leaf{Name: "peer"})
	peer := clientTLS(t, tlsfiles.Files{Cert: pc, Key: pk, CA: ca.CAFile})

	ex, err := executor.New(executor.Config{Addr: addrs[0], Addrs: addrs[1:], ID: "tls-cl-1", TLS: peer, Slots: 1,
		Logger: testLogger(), Handlers: map[string]executor.Handler{
			"echo": executor.HandlerFunc(func(_ context.Context, task *executor.Task) (executor.Result, error) {
				return executor.Result{Out: map[string]string{"x": task.Args["x"]}}, nil
			}),
		}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- ex.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-runDone)
	}()

	wctx, wcancel := context.WithTimeout(context.Background(), patience.Scale(30*time.Second))
	defer wcancel()
	cl, err := client.Dial(wctx, addrs[0], client.Options{Addrs: addrs[1:], TLS: peer, Logger: testLogger(),
		DialTimeout: patience.Scale(20 * time.Second)})
	require.NoError(t, err)
	defer cl.Close()
	_, done, err := cl.SubmitWait(wctx, client.SubmitRequest{Type: "echo", Args: map[string]string{"x": "replicated"}})
	require.NoError(t, err)
	assert.Equal(t, "succeeded", done.State)
	assert.Equal(t, "replicated", done.Out["x"])
}
