package maincontrol

import (
	"net"
	"strconv"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/maincontrol/dashboard"
)

// dashSource is the dashboard's read side. Each read takes the server's
// lock, as /metrics does, for one bounded look at the core. The core
// belongs to the event loop, and the lock serializes it. Actions do not
// come this way (see dashboard.Loopback).
type dashSource struct{ s *Server }

func (d dashSource) Overview() dashboard.Overview {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	return dashboard.Overview{Counts: d.s.core.Counts(), Executors: d.s.core.Executors(), Paused: d.s.core.PausedNames()}
}

func (d dashSource) Totals() dashboard.Totals {
	d.s.mu.Lock()
	next := d.s.core.NextTaskID()
	d.s.mu.Unlock()
	m := d.s.metrics
	return dashboard.Totals{Submitted: next - 1, Succeeded: m.ended[core.Succeeded].Value(),
		Failed: m.ended[core.Failed].Value(), Cancelled: m.ended[core.Cancelled].Value()}
}

func (d dashSource) Browse(q core.BrowseQuery) core.BrowsePage {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	return d.s.core.Browse(q)
}

func (d dashSource) Task(id uint64) (core.TaskInfo, bool) {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	return d.s.core.Task(id)
}

func (d dashSource) History(id uint64) []core.Transition {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	return d.s.core.TaskHistory(id)
}

// loopbackAddr is where the dashboard dials the main port. It is the bound
// address, with an unspecified host (0.0.0.0, ::) made loopback.
func loopbackAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ip := tcp.IP
	switch {
	case ip == nil || ip.Equal(net.IPv4zero):
		ip = net.IPv4(127, 0, 0, 1)
	case ip.Equal(net.IPv6unspecified):
		ip = net.IPv6loopback
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port))
}

func (s *Server) newDashboard() (*dashboard.Dashboard, *dashboard.Loopback) {
	lb := &dashboard.Loopback{Addr: loopbackAddr(s.acceptor.ln.Addr()),
		Opts: client.Options{Token: s.cfg.Core.Token, AdminToken: s.cfg.Core.AdminToken, Name: "dashboard", Logger: s.log}}
	if s.tlsConfig != nil {
		// Its own port speaks TLS, maybe with client certificates the
		// main control lacks. It reaches the event loop directly instead.
		lb.Opts.Dial = s.dialInProcess
	}
	host, _, _ := net.SplitHostPort(s.cfg.HTTPListen)
	d := dashboard.New(dashboard.Options{Source: dashSource{s}, Actor: lb, Token: s.cfg.Core.Token,
		AdminToken: s.cfg.Core.AdminToken, ListenHost: host, Logger: s.log})
	return d, lb
}
