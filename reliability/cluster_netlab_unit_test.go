//go:build linux

package reliability_test

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// labMain starts a single-node main control in member i's namespace on
// its lab address and waits for its welcome from the client namespace.
func labMain(t *testing.T, lab *netLab, i int) string {
	t.Helper()
	addr := memberIP(i) + ":7100"
	p := lab.start(i, "maincontrol", "--listen", addr, "--data-dir", t.TempDir(), "--log-level", "warn")
	if err := lab.waitWelcome(addr, p, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return addr
}

// reachable reports whether a welcome comes from addr, dialled from ns.
func reachable(ns, addr string) bool {
	c, err := dialIn(ns, addr, 700*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(700 * time.Millisecond))
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	return err == nil && strings.Contains(string(buf[:n]), "welcome")
}

// TestNetLab_PartitionIsolatesAndHeals checks the partition the cluster
// rounds rely on: an isolated member reaches no member and no peer, and
// is reached by none; the others still reach each other; an established
// connection stalls (no reset) and carries its reply once healed.
func TestNetLab_PartitionIsolatesAndHeals(t *testing.T) {
	lab := newNetLab(t, 3)
	addrs := []string{labMain(t, lab, 0), labMain(t, lab, 1), labMain(t, lab, 2)}
	for i, a := range addrs {
		for j := range addrs {
			if !reachable(lab.members[j], a) {
				t.Fatalf("member %d cannot reach member %d before any partition", j, i)
			}
		}
	}

	// An established client connection to member 1, through the bridge.
	conn, err := lab.dial(addrs[1], 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPeer(conn)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	if _, err := p.handshake("hello", nil, "req", "h"); err != nil {
		t.Fatal(err)
	}

	lab.isolate(1)
	if reachable(lab.client, addrs[1]) {
		t.Error("the client namespace reaches the isolated member")
	}
	if reachable(lab.members[0], addrs[1]) || reachable(lab.members[2], addrs[1]) {
		t.Error("a member reaches the isolated member")
	}
	if reachable(lab.members[1], addrs[0]) || reachable(lab.members[1], addrs[2]) {
		t.Error("the isolated member reaches another member")
	}
	if !reachable(lab.members[0], addrs[2]) || !reachable(lab.members[2], addrs[0]) || !reachable(lab.client, addrs[0]) {
		t.Error("the members on the majority side do not reach each other or the client")
	}
	if err := p.send("stats", "req", "s1"); err != nil {
		t.Fatalf("the stalled connection refused a write: %v", err)
	}
	time.Sleep(time.Second)
	if n, err := pending(conn); err != nil {
		t.Errorf("the partition ended the connection (%v); it must only stall it", err)
	} else if n > 0 {
		t.Errorf("%d bytes of a reply crossed the partition", n)
	}

	lab.heal(1)
	for i, a := range addrs {
		for j := range addrs {
			if !waitReachable(lab.members[j], a, 10*time.Second) {
				t.Errorf("member %d cannot reach member %d after healing", j, i)
			}
		}
	}
	// TCP retransmits the request sent during the cut; the reply comes.
	m, err := p.recv(30 * time.Second)
	if err != nil || m.Type() != "stats" || m.Value("req") != "s1" {
		t.Errorf("the request sent during the partition got %v, %v after healing; want its stats reply", m, err)
	}
}

func waitReachable(ns, addr string, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(100 * time.Millisecond) {
		if reachable(ns, addr) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// pending returns how many bytes wait unread on conn, without reading
// them (a read that times out would spoil the peer's reader).
func pending(conn net.Conn) (int, error) {
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var rerr error
	buf := make([]byte, 4096)
	err = raw.Read(func(fd uintptr) bool {
		n, _, rerr = unix.Recvfrom(int(fd), buf, unix.MSG_PEEK|unix.MSG_DONTWAIT)
		return true
	})
	if errors.Is(rerr, unix.EAGAIN) {
		return 0, nil
	}
	if err == nil {
		err = rerr
	}
	if err == nil && n == 0 {
		err = io.EOF
	}
	return n, err
}

// labNamespaces lists the named namespaces of lab.
func labNamespaces(t *testing.T, name string) []string {
	t.Helper()
	entries, err := os.ReadDir(netnsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), name) {
			got = append(got, e.Name())
		}
	}
	return got
}

// TestNetLab_RemovesEverythingEvenWhenCutShort ends a lab's test early
// (as a failure does: the test's goroutine exits mid-way) with a member
// running and a partition in place: every namespace, its links and the
// process must be gone afterwards.
func TestNetLab_RemovesEverythingEvenWhenCutShort(t *testing.T) {
	var name string
	var pid int
	t.Run("cut short", func(t *testing.T) {
		lab := newNetLab(t, 3)
		name = lab.name
		labMain(t, lab, 0)
		out, err := exec.Command(ipCmd, "netns", "pids", lab.members[0]).Output()
		if err != nil {
			t.Fatal(err)
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(string(out)))
		lab.isolate(2)
		if n := len(labNamespaces(t, name)); n != 5 {
			t.Fatalf("%d namespaces made, want 5 (bridge, client, 3 members)", n)
		}
		t.SkipNow() // leaves through runtime.Goexit, as t.Fatal does
	})
	if name == "" {
		t.Skip("the lab could not be made here")
	}
	if left := labNamespaces(t, name); len(left) > 0 {
		t.Errorf("namespaces left after the test: %v", left)
	}
	if pid > 0 && processAlive(pid) {
		t.Errorf("the member process %d still runs after the test", pid)
	}
}

// TestNetLab_SweepsLeftoversOfACrashedRun makes the namespaces a run
// killed before its cleanups would leave, with a process inside, and
// checks that the next lab removes them and ends the process; a live
// run's lab must be left alone.
func TestNetLab_SweepsLeftoversOfACrashedRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the cluster group needs root: it makes network namespaces and veth links")
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	dead := labPrefix + strconv.Itoa(gone.Process.Pid) + "-1-"
	if processAlive(gone.Process.Pid) {
		t.Skip("the pid of the exited process was reused at once")
	}
	if err := ipRun("netns", "add", dead+"m0"); err != nil {
		t.Skipf("network namespaces are unavailable here: %v", err)
	}
	t.Cleanup(func() { _ = removeNamespace(dead + "m0") })
	if err := ipRun("link", "add", "eth0", "netns", dead+"m0", "type", "veth", "peer", "name", "a11sweep"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ipRun("link", "del", "a11sweep") })
	sleeper := exec.Command(ipCmd, "netns", "exec", dead+"m0", "sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sleeper.Wait() }()
	t.Cleanup(func() { _ = sleeper.Process.Kill() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, _ := exec.Command(ipCmd, "netns", "pids", dead+"m0").Output()
		if strings.Contains(" "+strings.Join(strings.Fields(string(out)), " ")+" ", " "+strconv.Itoa(sleeper.Process.Pid)+" ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leftover's process never entered its namespace")
		}
	}

	lab := newNetLab(t, 1)
	if _, err := os.Stat(filepath.Join(netnsDir, dead+"m0")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the leftover namespace %s was not removed (stat: %v)", dead+"m0", err)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("the leftover's process ended with %v, want killed", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the process in the leftover namespace still runs")
	}
	// The veth's root end went with the namespace that held its peer.
	if err := ipRun("link", "show", "a11sweep"); err == nil {
		t.Error("the leftover's veth link is still there")
	}
	// A live run's lab (this test's own) is kept.
	sweepLabs(t)
	if got := labNamespaces(t, lab.name); len(got) != 3 {
		t.Errorf("sweeping removed a live lab's namespaces: %v left of 3", got)
	}
}
