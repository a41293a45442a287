package maincontrol

import (
	"strconv"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/apollo11/apollo11/wire"
)

// refusalLog keeps a flood of refused connections from flooding the log.
// It writes one line, then a count once a second while refusals go on.
type refusalLog struct {
	last    time.Time
	skipped int
}

// refuseConn builds the error frame sent in place of welcome, and logs
// the refusal. It goes to a connection over --max-conns, or one arriving
// while the main control stops. The peer learns why, as wire.ParseWelcome
// keeps the code, rather than seeing a bare close. It runs with s.mu held.
func (s *Server) refuseConn(gc gnet.Conn) []byte {
	reason := "too many connections (--max-conns " + strconv.Itoa(s.cfg.MaxConns) + "); try again later"
	if s.stopping {
		reason = "the main control is stopping; try again later"
	}
	if now := time.Now(); now.Sub(s.refusals.last) >= time.Second {
		s.log.Warn("connection refused", "remote", gc.RemoteAddr(), "reason", reason,
			"refused_since_last_line", s.refusals.skipped)
		s.refusals = refusalLog{last: now}
	} else {
		s.refusals.skipped++
	}
	return wire.ErrorFrame(wire.CodeUnavailable, reason)
}
