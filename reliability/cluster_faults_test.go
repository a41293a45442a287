//go:build linux

package reliability_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apollo11/apollo11/internal/testbin"
)

// clusterMembers is a cluster of main controls, one per lab member.
type clusterMembers struct {
	t     *testing.T
	lab   *netLab
	addrs []string // client addresses: the members' ids
	rafts []string
	dirs  []string
	procs []*testbin.Proc
}

// startClusterMembers starts one member in each of lab's namespaces.
func startClusterMembers(t *testing.T, lab *netLab) *clusterMembers {
	t.Helper()
	c := &clusterMembers{t: t, lab: lab}
	for i := range lab.members {
		c.addrs = append(c.addrs, memberIP(i)+":7100")
		c.rafts = append(c.rafts, memberIP(i)+":7200")
		c.dirs = append(c.dirs, t.TempDir())
	}
	c.procs = make([]*testbin.Proc, len(c.addrs))
	for i := range c.addrs {
		c.start(i)
	}
	return c
}

// start runs member i on its data dir and waits for its welcome.
func (c *clusterMembers) start(i int) {
	c.t.Helper()
	var members []string
	for j := range c.addrs {
		members = append(members, c.addrs[j]+"="+c.rafts[j])
	}
	p := c.lab.start(i, "maincontrol", "--listen", c.addrs[i], "--raft-listen", c.rafts[i],
		"--cluster-members", strings.Join(members, ","), "--data-dir", c.dirs[i], "--log-level", "warn",
		"--heartbeat-timeout", "1500ms", "--heartbeat-interval", "500ms")
	if err := c.lab.waitWelcome(c.addrs[i], p, 60*time.Second); err != nil {
		c.t.Fatalf("member %d: %v", i, err)
	}
	c.procs[i] = p
}

// status asks member i for its role and the leader it knows.
func (c *clusterMembers) status(i int) (role, leader string, err error) {
	conn, err := c.lab.dial(c.addrs[i], time.Second)
	if err != nil {
		return "", "", err
	}
	p, err := newPeer(conn)
	if err != nil {
		return "", "", err
	}
	defer p.close()
	if _, err := p.handshake("hello", nil, "req", "h"); err != nil {
		return "", "", err
	}
	if err := p.send("cluster_status", "req", "s"); err != nil {
		return "", "", err
	}
	m, err := p.recv(2 * time.Second)
	if err != nil {
		return "", "", err
	}
	if m.Type() != "cluster_status_ok" {
		return "", "", fmt.Errorf("cluster_status answered %s", m)
	}
	return m.Value("role"), m.Value("leader"), nil
}

// waitLeader waits until a member other than those in skip says it leads
// and returns it.
func (c *clusterMembers) waitLeader(timeout time.Duration, skip ...int) int {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for i := range c.addrs {
			if slices.Contains(skip, i) {
				continue
			}
			if role, _, err := c.status(i); err == nil && role == "leader" {
				return i
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no leader among the members within %v", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitFollows waits until member i answers and names as leader the
// member that says it leads (an old leader back from a partition may
// still believe it leads for a moment).
func (c *clusterMembers) waitFollows(i int, timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		role, leader, err := c.status(i)
		if err == nil && leader != "" && role != "candidate" {
			if j := slices.Index(c.addrs, leader); j >= 0 {
				if r, _, err := c.status(j); err == nil && r == "leader" {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("member %d does not follow a leader %v after it came back", i, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// probeSubmit makes one keyed submit through whichever member leads, as
// a client of the history, and returns when it was confirmed.
func probeSubmit(t *testing.T, lab *netLab, addrs []string, l *clusterLoad, key string) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := newClusterClient(lab, addrs, l.clients, l.hist)
	l.clients++
	defer c.drop()
	l.counts.submits.Add(1)
	for ctx.Err() == nil {
		if _, ok := c.submit(ctx, key); ok {
			return time.Now()
		}
	}
	t.Fatalf("no member confirmed the submit %s within 60 s", key)
	return time.Time{}
}

// TestCluster_LeaderKillsAndPartitions runs a 3-member cluster in the
// lab under a load of recording clients and executors, and injects
// faults in turn: kill -9 of the leader (then a restart of it on its data
// dir), and partitions that cut off the leader or a follower for 2 s.
// Afterwards every task of the history is queried through the leader,
// and the history must check linearizable against the model of keyed
// submit, query and result acceptance, with no confirmed change lost, no
// task with two accepted results and no id given twice.
func TestCluster_LeaderKillsAndPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster rounds take a while")
	}
	requireClusterMode(t)
	kills, parts := clusterScale()
	lab := newNetLab(t, 3)
	cm := startClusterMembers(t, lab)
	cm.waitLeader(60 * time.Second)
	fig := figures.add(15, "leader kill -9 and network partitions, 3-member cluster (netns lab)", "faults")
	l := startLoad(lab, cm.addrs, 4, 2)
	defer l.stop()
	waitOps(t, l, 50)

	var failovers []time.Duration
	killed, cut, cutLeader := 0, 0, 0
	for killed < kills || cut < parts {
		leader := cm.waitLeader(60 * time.Second)
		if cut >= parts || (killed < kills && killed*parts <= cut*kills) {
			killed++
			start := time.Now()
			cm.procs[leader].Kill()
			served := probeSubmit(t, lab, cm.addrs, l, "probe-kill-"+strconv.Itoa(killed))
			failovers = append(failovers, served.Sub(start))
			cm.start(leader)
			cm.waitFollows(leader, 60*time.Second)
		} else {
			cut++
			target := leader
			if cut%2 == 0 {
				target = (leader + 1) % len(cm.addrs)
			} else {
				cutLeader++
			}
			start := time.Now()
			lab.isolate(target)
			served := probeSubmit(t, lab, cm.addrs, l, "probe-cut-"+strconv.Itoa(cut))
			if target == leader {
				failovers = append(failovers, served.Sub(start))
			}
			time.Sleep(2 * time.Second) // the fault lasts, under load
			lab.heal(target)
			cm.waitFollows(target, 60*time.Second)
		}
		fig.injected++
		waitOps(t, l, 20)
		if t.Failed() {
			break
		}
	}
	l.stop()
	cm.waitLeader(60 * time.Second)
	verifyHistory(t, lab, cm.addrs, l, fig)
	slices.Sort(failovers)
	for _, d := range failovers {
		fig.recovered(d)
	}
	if n := len(failovers); n > 0 {
		fig.note("%d leader kills and %d partitions (%d of the leader); from the fault to a submit confirmed by the new leader: median %v, slowest %v",
			killed, cut, cutLeader, failovers[n/2].Round(time.Millisecond), failovers[n-1].Round(time.Millisecond))
	}
}
