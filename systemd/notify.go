// Package systemd speaks the sd_notify protocol (READY=1, WATCHDOG=1,
// STOPPING=1) to the service manager over $NOTIFY_SOCKET, and holds the
// unit files of both daemons beside it. Without $NOTIFY_SOCKET every call is
// a no-op, so the daemons run the same outside systemd.
package systemd

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// Notifier sends state changes to systemd.
type Notifier struct {
	addr     *net.UnixAddr // nil when not under systemd
	interval time.Duration // watchdog keep-alive period, 0 when off

	mu   sync.Mutex
	last time.Time
}

// FromEnv reads $NOTIFY_SOCKET and $WATCHDOG_USEC (honouring $WATCHDOG_PID).
func FromEnv() *Notifier {
	n := &Notifier{}
	sock := os.Getenv("NOTIFY_SOCKET")
	if sock == "" {
		return n
	}
	if sock[0] == '@' { // abstract socket
		sock = "\x00" + sock[1:]
	}
	n.addr = &net.UnixAddr{Name: sock, Net: "unixgram"}
	if usec, err := strconv.ParseUint(os.Getenv("WATCHDOG_USEC"), 10, 63); err == nil && usec > 0 {
		pid := os.Getenv("WATCHDOG_PID")
		if pid == "" || pid == strconv.Itoa(os.Getpid()) {
			// Ping at half the timeout, as sd_watchdog_enabled(3) advises.
			n.interval = time.Duration(usec) * time.Microsecond / 2
		}
	}
	return n
}

// Enabled reports whether systemd is listening.
func (n *Notifier) Enabled() bool { return n.addr != nil }

// WatchdogInterval returns how often Watchdog must be called, 0 if off.
func (n *Notifier) WatchdogInterval() time.Duration { return n.interval }

// Send sends one notification, e.g. "READY=1".
func (n *Notifier) Send(state string) error {
	if n.addr == nil {
		return nil
	}
	c, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("cannot reach NOTIFY_SOCKET: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return fmt.Errorf("cannot notify systemd: %w", err)
	}
	return nil
}

// Ready says start-up is done (recovery finished, listener up).
func (n *Notifier) Ready() error { return n.Send("READY=1\nSTATUS=ready") }

// Stopping says a graceful stop began.
func (n *Notifier) Stopping() error { return n.Send("STOPPING=1") }

// Watchdog sends WATCHDOG=1 if half the watchdog timeout has passed since
// the last one. Call it from the event loop's ticker. Then a stuck loop
// stops the pings, and systemd restarts the service.
func (n *Notifier) Watchdog(now time.Time) error {
	if n.interval == 0 {
		return nil
	}
	n.mu.Lock()
	due := now.Sub(n.last) >= n.interval
	if due {
		n.last = now
	}
	n.mu.Unlock()
	if !due {
		return nil
	}
	return n.Send("WATCHDOG=1")
}
