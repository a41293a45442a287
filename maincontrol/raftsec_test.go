package maincontrol_test

import (
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

const raftPlainWarning = "raft listening beyond loopback without TLS"

// A plaintext raft port beyond loopback lets anyone who reaches it rewrite
// the replicated state: startup warns, as for a client port without a
// token. On loopback it does not.
func TestCluster_WarnsPlainRaftBeyondLoopback(t *testing.T) {
	for _, beyond := range []bool{true, false} {
		t.Run(fmt.Sprint("beyond=", beyond), func(t *testing.T) {
			var logs syncbuf.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			raft := freeAddr(t)
			listen := raft
			if beyond {
				_, port, err := net.SplitHostPort(raft)
				require.NoError(t, err)
				listen = net.JoinHostPort("0.0.0.0", port)
			}
			id := freeAddr(t)
			maincontroltest.Start(t, maincontrol.Config{Listen: id, DataDir: t.TempDir(), RaftListen: listen,
				ClusterMembers: []cluster.Member{{ID: id, Raft: raft, Voter: true}}, Logger: logger})
			require.Eventually(t, func() bool { return strings.Contains(logs.String(), "main control ready") },
				10*time.Second, 10*time.Millisecond, logs.String())
			if beyond {
				require.Eventually(t, func() bool { return strings.Contains(logs.String(), raftPlainWarning) },
					10*time.Second, 10*time.Millisecond, logs.String())
				assert.Contains(t, logs.String(), "--raft-tls-cert")
			} else {
				assert.NotContains(t, logs.String(), raftPlainWarning)
			}
		})
	}
}

// A member's id is its --listen, which followers name as the leader and
// clients must dial. One on all interfaces names no address: refused.
func TestCluster_RefusesAnIDClientsCannotDial(t *testing.T) {
	_, port, err := net.SplitHostPort(freeAddr(t))
	require.NoError(t, err)
	for _, host := range []string{"", "0.0.0.0", "::"} {
		listen := net.JoinHostPort(host, port)
		t.Run(listen, func(t *testing.T) {
			raft := freeAddr(t)
			_, stop, err := maincontroltest.Launch(maincontrol.Config{Listen: listen, DataDir: filepath.Join(t.TempDir(), "d"),
				RaftListen: raft, ClusterMembers: []cluster.Member{{ID: listen, Raft: raft, Voter: true}}, Logger: testLogger()})
			if err == nil {
				assert.NoError(t, stop())
				t.Fatalf("a member listening on %s started", listen)
			}
			assert.Contains(t, err.Error(), maincontrol.ErrConfig.Error())
			assert.Contains(t, err.Error(), "clients dial")
			assert.Contains(t, err.Error(), "listen on that address")
		})
	}
}

// With --advertise a member listens on all interfaces and is known by the
// address it advertises: followers name the leader by it, so clients that
// list it follow. An advertised address clients cannot dial is refused,
// and --advertise outside cluster mode is a configuration error.
func TestCluster_AdvertiseIsTheMemberID(t *testing.T) {
	tc := &testCluster{t: t}
	var members []cluster.Member
	var listens []string
	for range 3 {
		id := freeAddr(t)
		_, port, err := net.SplitHostPort(id)
		require.NoError(t, err)
		members = append(members, cluster.Member{ID: id, Raft: freeAddr(t), Voter: true})
		listens = append(listens, net.JoinHostPort("0.0.0.0", port))
		tc.addrs = append(tc.addrs, id)
	}
	for i, m := range members {
		_, stop, err := maincontroltest.Launch(maincontrol.Config{Listen: listens[i], Advertise: m.ID,
			DataDir: filepath.Join(t.TempDir(), "d"), RaftListen: m.Raft, ClusterMembers: members, Logger: testLogger()})
		require.NoError(t, err)
		tc.stops = append(tc.stops, stop)
	}
	defer func() {
		for _, stop := range tc.stops {
			assert.NoError(t, stop())
		}
	}()
	l := tc.leader() // checks that the leader names itself by its advertised address
	role, leader := helloRole(tc.addrs[(l+1)%3])
	assert.Equal(t, "follower", role)
	assert.Equal(t, tc.addrs[l], leader, "a follower names the leader by its advertised address")

	for _, bad := range []string{"0.0.0.0:1969", ":1969", "127.0.0.1", "[::]:1969", "127.0.0.1:0", "localhost:http", "localhost:65536"} {
		_, stop, err := maincontroltest.Launch(maincontrol.Config{Listen: freeAddr(t), Advertise: bad,
			DataDir: filepath.Join(t.TempDir(), "d"), RaftListen: freeAddr(t), Logger: testLogger()})
		if err == nil {
			assert.NoError(t, stop())
			t.Fatalf("a member advertising %s started", bad)
		}
		assert.Contains(t, err.Error(), "--advertise")
	}
	_, stop, err := maincontroltest.Launch(maincontrol.Config{Listen: freeAddr(t), Advertise: freeAddr(t), Logger: testLogger()})
	if err == nil {
		assert.NoError(t, stop())
		t.Fatal("--advertise without --raft-listen started")
	}
	assert.Contains(t, err.Error(), "needs --raft-listen")
}

// A member restarted under a new id (here a new --advertise) at the raft
// address its state holds under the old one is refused: raft would turn
// down its votes for ever, and no error would say why.
func TestCluster_RefusesARenamedMember(t *testing.T) {
	tc := startCluster(t, 3)
	f := (tc.leader() + 1) % 3
	require.NoError(t, tc.stops[f]())
	tc.stops[f] = nil
	cfg := tc.configs[f]
	_, port, err := net.SplitHostPort(cfg.Listen)
	require.NoError(t, err)
	cfg.Listen, cfg.Advertise, cfg.ClusterMembers = "0.0.0.0:"+port, "localhost:"+port, nil
	_, stop, err := maincontroltest.Launch(cfg)
	if err == nil {
		assert.NoError(t, stop())
		t.Fatal("a renamed member started")
	}
	assert.Contains(t, err.Error(), "--advertise "+tc.addrs[f], "the error names the id to start it with")

	cfg.Listen, cfg.Advertise = tc.configs[f].Listen, ""
	_, stop, err = maincontroltest.Launch(cfg)
	require.NoError(t, err, "under its own id it starts again")
	tc.stops[f] = stop
}
