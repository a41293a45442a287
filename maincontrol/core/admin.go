package core

import (
	"log/slog"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/wire"
)

// features are the optional groups of protocol section 8.1 this server
// speaks, announced in every welcome.
var features = []wire.Feature{wire.FeatureAdmin, wire.FeatureTypes, wire.FeatureSchedules, wire.FeatureRuns}

// featureList is features as the welcome writes it.
var featureList = strings.Join(features, ",")

// adminProof checks a hello's admin_auth (protocol section 8.2). It reports
// whether the connection may send admin messages. Its second value is false
// when a wrong proof closed the connection. Without an admin token every
// client may. With one, only a client that proves it may.
func (c *Core) adminProof(p *peer, m *wire.Message, req string) (admin, ok bool) {
	if c.cfg.AdminToken == nil {
		return true, true
	}
	mac, has := m.Get("admin_auth")
	if !has {
		return false, true
	}
	if !auth.Verify(c.cfg.AdminToken, p.nonce, mac) {
		c.log.Warn("admin authentication failed", "peer", p.id, "remote", p.remote, "client", clipText(m.Value("client")))
		c.sendError(p, req, wire.CodeAuthFailed, "admin authentication failed")
		return false, false
	}
	return true, true
}

// requireAdmin lets an admin message through, or answers not_permitted
// when the connection has not proven the admin token. Every admin message
// calls it before it looks at its values.
func (c *Core) requireAdmin(p *peer, m *wire.Message, req string) bool {
	if p.admin {
		return true
	}
	c.logLimited(slog.LevelWarn, "admin message refused: no admin proof", append(c.askedBy(p), "type", clipText(m.Type()))...)
	c.sendError(p, req, wire.CodeNotPermitted, strconv.Quote(clipText(m.Type()))+
		" needs the admin token: prove it in hello with admin_auth (the main control has --admin-token-file)")
	return false
}

// askedBy names who sent a request, for the log line of every admin
// operation. It gives the connection, its address and its client name.
func (c *Core) askedBy(p *peer) []any {
	return []any{"peer", uint64(p.id), "remote", p.remote, "client", p.name}
}
