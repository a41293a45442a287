//go:build linux

package reliability_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/apollo11/apollo11/internal/testbin"
)

// The cluster group partitions a network of its own, on this machine
// only. Each member runs in its own network namespace with one veth link
// to a bridge in another namespace; the test's peers dial from a client
// namespace on the same bridge. Taking a member's bridge port down cuts
// it off from every other member and every peer, without a reset: its
// connections stall as on a real cut. Nothing is added to the host's own
// namespace, so concurrent runs cannot collide.

// ipCmd is iproute2; the lab needs nothing else (no iptables or nft).
const ipCmd = "/usr/sbin/ip"

// labPrefix starts every namespace a lab makes, then the pid that made it.
const labPrefix = "a11lab-"

// netnsDir is where `ip netns` keeps its named namespaces.
const netnsDir = "/var/run/netns"

var labSeq atomic.Int64

// netLab is one test's private network: a bridge, a client namespace and
// one namespace per member, removed when the test ends.
type netLab struct {
	t       testing.TB
	name    string // labPrefix + pid + "-" + seq + "-"
	bridge  string // the namespace holding br0
	client  string // the namespace the test's peers dial from
	members []string
}

// memberIP is member i's address on the lab's bridge.
func memberIP(i int) string { return "10.0.0." + strconv.Itoa(i+1) }

// clientIP is the client namespace's address.
const clientIP = "10.0.0.100"

// ipRun runs ip with args and returns its error with its output.
func ipRun(args ...string) error {
	out, err := exec.Command(ipCmd, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// newNetLab makes a lab of n members. It skips the test when it is not
// run as root or network namespaces cannot be made here. Leftovers of a
// crashed earlier run are removed first.
func newNetLab(t testing.TB, n int) *netLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the cluster group needs root: it makes network namespaces and veth links")
	}
	if _, err := os.Stat(ipCmd); err != nil {
		t.Skipf("the cluster group needs iproute2 at %s: %v", ipCmd, err)
	}
	sweepLabs(t)
	lab := &netLab{t: t, name: fmt.Sprintf("%s%d-%d-", labPrefix, os.Getpid(), labSeq.Add(1))}
	lab.bridge, lab.client = lab.name+"br", lab.name+"cl"
	if err := ipRun("netns", "add", lab.bridge); err != nil {
		t.Skipf("network namespaces are unavailable here: %v", err)
	}
	// Registered before anything else is made: a failure below still
	// removes what was made so far.
	t.Cleanup(lab.remove)
	lab.must("-n", lab.bridge, "link", "add", "br0", "type", "bridge")
	lab.must("-n", lab.bridge, "link", "set", "br0", "up")
	lab.attach(lab.client, "cl", clientIP)
	for i := 0; i < n; i++ {
		ns := lab.name + "m" + strconv.Itoa(i)
		lab.members = append(lab.members, ns)
		lab.attach(ns, "m"+strconv.Itoa(i), memberIP(i))
	}
	return lab
}

func (lab *netLab) must(args ...string) {
	lab.t.Helper()
	if err := ipRun(args...); err != nil {
		lab.t.Fatal(err)
	}
}

// attach makes namespace ns with a veth link: eth0 with addr inside,
// port on the bridge.
func (lab *netLab) attach(ns, port, addr string) {
	lab.t.Helper()
	lab.must("netns", "add", ns)
	lab.must("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", port, "netns", lab.bridge)
	lab.must("-n", lab.bridge, "link", "set", port, "master", "br0", "up")
	lab.must("-n", ns, "addr", "add", addr+"/24", "dev", "eth0")
	lab.must("-n", ns, "link", "set", "eth0", "up")
	lab.must("-n", ns, "link", "set", "lo", "up")
}

// namespaces lists the lab's namespaces, the bridge's last.
func (lab *netLab) namespaces() []string {
	return append(append([]string{lab.client}, lab.members...), lab.bridge)
}

// remove kills what still runs in the lab's namespaces and deletes them;
// their veth links go with them.
func (lab *netLab) remove() {
	for _, ns := range lab.namespaces() {
		if err := removeNamespace(ns); err != nil {
			lab.t.Errorf("netlab: %v", err)
		}
	}
}

// removeNamespace kills every process in ns, then deletes it. A missing
// namespace is not an error.
func removeNamespace(ns string) error {
	if _, err := os.Stat(filepath.Join(netnsDir, ns)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if out, err := exec.Command(ipCmd, "netns", "pids", ns).Output(); err == nil {
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	return ipRun("netns", "del", ns)
}

// sweepLabs removes the namespaces of labs whose test process is gone:
// a run killed before its cleanups leaves them behind.
func sweepLabs(t testing.TB) {
	t.Helper()
	entries, err := os.ReadDir(netnsDir)
	if err != nil {
		return // no named namespace yet
	}
	for _, e := range entries {
		pid, ok := labOwner(e.Name())
		if !ok || processAlive(pid) {
			continue
		}
		if err := removeNamespace(e.Name()); err != nil {
			t.Errorf("netlab: removing a leftover: %v", err)
		} else {
			t.Logf("netlab: removed leftover namespace %s of the gone process %d", e.Name(), pid)
		}
	}
}

// labOwner returns the pid in a lab namespace's name.
func labOwner(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, labPrefix)
	if !ok {
		return 0, false
	}
	pidText, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(pidText)
	return pid, err == nil && pid > 0
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// isolate cuts member i off from every member and peer, without a reset.
func (lab *netLab) isolate(i int) {
	lab.t.Helper()
	lab.must("-n", lab.bridge, "link", "set", "m"+strconv.Itoa(i), "down")
}

// heal joins member i again.
func (lab *netLab) heal(i int) {
	lab.t.Helper()
	lab.must("-n", lab.bridge, "link", "set", "m"+strconv.Itoa(i), "up")
}

// dial connects from the client namespace.
func (lab *netLab) dial(addr string, timeout time.Duration) (net.Conn, error) {
	return dialIn(lab.client, addr, timeout)
}

// dialIn connects to addr from inside namespace ns. The socket is made
// on a thread moved into ns and back; the socket keeps its namespace
// wherever it is used afterwards. The thread must come back: a thread
// that ends would SIGKILL every child forked from it (testbin sets
// Pdeathsig), so it is kept locked, and ends, only if it cannot.
func dialIn(ns, addr string, timeout time.Duration) (net.Conn, error) {
	type dialed struct {
		c   net.Conn
		err error
	}
	ch := make(chan dialed, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- dialed{nil, fmt.Errorf("open this thread's namespace: %w", err)}
			return
		}
		defer unix.Close(home)
		fd, err := unix.Open(filepath.Join(netnsDir, ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- dialed{nil, fmt.Errorf("open namespace %s: %w", ns, err)}
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- dialed{nil, fmt.Errorf("enter namespace %s: %w", ns, err)}
			return
		}
		c, err := net.DialTimeout("tcp", addr, timeout)
		if unix.Setns(home, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- dialed{c, err}
	}()
	d := <-ch
	return d.c, d.err
}

// start runs the apollo11 binary with args inside member i's namespace.
// testbin kills it when the test ends; the lab's removal kills anything
// left.
func (lab *netLab) start(i int, args ...string) *testbin.Proc {
	lab.t.Helper()
	bin := testbin.Build(lab.t)
	return testbin.Start(lab.t, ipCmd, nil, append([]string{"netns", "exec", lab.members[i], bin}, args...)...)
}

// waitWelcome polls addr from the client namespace until a connection
// gets a welcome frame, p exits or timeout passes.
func (lab *netLab) waitWelcome(addr string, p *testbin.Proc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := labWelcome(lab, addr, time.Second)
		if err == nil {
			return nil
		}
		if p != nil && p.Exited() {
			return fmt.Errorf("process exited: %s", p.Output())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no welcome from %s within %v: %v", addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// labWelcome dials addr from the client namespace and reads a welcome.
func labWelcome(lab *netLab, addr string, timeout time.Duration) error {
	c, err := lab.dial(addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if n <= 4 || !strings.HasPrefix(string(buf[4:n]), "type=welcome") {
		return fmt.Errorf("first bytes from %s are %q, not a welcome", addr, buf[:n])
	}
	return nil
}
