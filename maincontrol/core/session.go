package core

import (
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/wire"
)

// emptyReq stands for a present but empty req (`req=`). The core carries a
// request's req as a string, and "" means "no req". A reply to `req=`
// carries `req=`, since every reply carries the same req (spec section 3).
// It is longer than any req the core accepts, so no real req equals it.
var emptyReq = strings.Repeat("-", wire.MaxReqLen+1)

// requestReq returns m's req as the core carries it. That is "" when
// absent and emptyReq when empty. It returns false when the req is over
// 64 bytes after unescaping.
func requestReq(m *wire.Message) (string, bool) {
	req, has := m.Get("req")
	switch {
	case len(req) > wire.MaxReqLen:
		return "", false
	case has && req == "":
		return emptyReq, true
	}
	return req, true
}

// reqOf returns the request's req and whether it is acceptable. An
// oversize req is answered with bad_request without a req.
func (c *Core) reqOf(p *peer, m *wire.Message) (string, bool) {
	req, ok := requestReq(m)
	if !ok {
		c.sendError(p, "", wire.CodeBadRequest, "req: longer than 64 bytes")
	}
	return req, ok
}

// badRequest answers a value error.
func (c *Core) badRequest(p *peer, req string, err error) {
	c.sendError(p, req, wire.CodeBadRequest, err.Error())
}

// handshake handles the first frames of a connection (spec section 3).
// Those are register or hello, checked in the order proto, auth, values.
func (c *Core) handshake(p *peer, m *wire.Message) {
	kind := m.Kind()
	h := handshakeHandlers[kind]
	if h == nil {
		c.sendError(p, echoReq(m), wire.CodeNotRegistered, "first frame must be register or hello, got "+strconv.Quote(clipText(string(kind))))
		return
	}
	req := ""
	if kind.SentBy(wire.RoleClient) {
		req = echoReq(m) // a client's hello is a request: its errors carry req
	}
	if v, ok := m.Get("proto"); ok && v != "1" {
		c.sendError(p, req, wire.CodeUnsupportedProto, "proto "+strconv.Quote(clipText(v))+" is not spoken here; proto=1 is")
		return
	}
	if c.cfg.Token != nil {
		mac, ok := m.Get("auth")
		if !ok || !auth.Verify(c.cfg.Token, p.nonce, mac) {
			c.log.Warn("authentication failed", "peer", p.id, "remote", p.remote, "type", string(kind))
			c.sendError(p, req, wire.CodeAuthFailed, "authentication failed")
			return
		}
	}
	h(c, p, m, req)
}

func (c *Core) hello(p *peer, m *wire.Message, req string) {
	admin, ok := c.adminProof(p, m, req)
	if !ok {
		return
	}
	if req, ok = c.reqOf(p, m); !ok {
		return
	}
	p.kind = peerClient
	p.admin = admin
	p.name = strings.Clone(clipText(m.Value("client")))
	b := c.begin(wire.KindHelloOK, req)
	if admin {
		b.BoolK(kAdmin, true)
	}
	c.helloRole(&b)
	c.greet(p.id, &b)
}

// validExecutorID reports whether id is 1 to 128 bytes of A-Z a-z 0-9 _ . : -
func validExecutorID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch ch := id[i]; {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9',
			ch == '_', ch == '.', ch == ':', ch == '-':
		default:
			return false
		}
	}
	return true
}

func (c *Core) register(p *peer, m *wire.Message) {
	if !c.serving() {
		// Executors register with the leader only (protocol 8.13).
		c.notLeader(p, "")
		c.closePeer(p)
		return
	}
	id, ok := m.Get("executor_id")
	if !ok {
		c.badRequest(p, "", wire.MissingKey("executor_id"))
		return
	}
	if !validExecutorID(id) {
		c.badRequest(p, "", &wire.ValueError{Key: "executor_id", Reason: "must be 1 to 128 bytes of A-Z a-z 0-9 _ . : -"})
		return
	}
	// An absent task_types is an empty list, like task_types=. Spec section 3
	// says "an absent list key means the same as an empty one".
	types, err := m.List("task_types")
	if err != nil {
		c.badRequest(p, "", err)
		return
	}
	if len(types) > wire.MaxExecutorTypes && distinct(types) > wire.MaxExecutorTypes {
		c.badRequest(p, "", &wire.ValueError{Key: "task_types", Reason: "more than " +
			strconv.Itoa(wire.MaxExecutorTypes) + " types; register fewer, or run several executors"})
		return
	}
	slots, err := m.UintOr("slots", 1)
	if err != nil {
		c.badRequest(p, "", err)
		return
	}
	if slots < 1 || slots > 65536 {
		c.badRequest(p, "", &wire.ValueError{Key: "slots", Reason: "must be 1 to 65536"})
		return
	}
	descs, ok := c.parseDescs(p, "", m, types)
	if !ok {
		return
	}
	if e := c.execs[id]; e != nil && e.connected() {
		c.sendError(p, "", wire.CodeDuplicateExecutor, "executor "+id+" is already connected")
		return
	}
	if !c.regRoom(p, "", "register", id, types) {
		return
	}
	// The message borrows from the read buffer, so copy what is kept.
	r := c.newRecord(recExecReg)
	r.exec = strings.Clone(id)
	if e := c.execs[id]; e != nil {
		r.exec = e.id
	}
	for _, t := range types {
		if tt := c.types[t]; tt != nil {
			r.types = append(r.types, tt.name)
		} else {
			r.types = append(r.types, strings.Clone(t))
		}
	}
	r.slots = slots
	c.commit(r)
	e := c.execs[id]
	e.peer = p.id
	c.liveExecs++
	e.lastSeen = c.now()
	e.hbCount = 0
	p.kind = peerExecutor
	p.exec = e
	c.refreshHeaps(e)
	c.watchLiveness(e)
	c.keepDescs(e, descs, true, nil)
	c.logLimited(slog.LevelInfo, "executor registered", "executor", e.id, "task_types", clipTypes(types), "slots", slots,
		"tasks", e.tasks.len())
	if e.load > e.slots {
		// It may come back with fewer slots than the dispatches it still holds,
		// after a restart with a new --slots. Those end as usual, by result,
		// reconciliation or timeout. It gets no task until it is under.
		c.log.Warn("executor holds more tasks than its new slots", "executor", e.id, "slots", e.slots, "tasks", e.load)
	}
	e.regMark = c.lastMark
	b := wire.Begin(c.frame[:0], wire.KindRegistered)
	b.StrK(kExecutorID, e.id)
	b.UintK(kHeartbeatMs, uint64(c.cfg.HeartbeatInterval.Milliseconds()))
	b.UintK(kTimeoutMs, uint64(c.cfg.HeartbeatTimeout.Milliseconds()))
	b.UintK(kStateVersion, c.stateVer)
	c.send(p.id, &b)
}

// echoReq returns the req an error reply carries. That is the request's,
// or none when it is over 64 bytes, since such a req is never echoed.
func echoReq(m *wire.Message) string {
	req, _ := requestReq(m)
	return req
}

// refuseType answers a message that its peer's table does not handle. A
// known type is not_permitted, any other is unknown_type.
func (c *Core) refuseType(p *peer, m *wire.Message) {
	typ := m.Kind()
	if typ == wire.KindError {
		// A peer that cannot decode one of our frames says so before it
		// closes. That is worth the operator's eye, though not a request.
		executor := ""
		if p.exec != nil {
			executor = p.exec.id
		}
		c.log.Warn("error from peer", "peer", p.id, "remote", p.remote, "executor", executor,
			"code", clipText(m.Value("code")), "message", clipText(m.Value("message")))
	}
	req := echoReq(m)
	if typ.Known() {
		c.sendError(p, req, wire.CodeNotPermitted, strconv.Quote(clipText(string(typ)))+" is not permitted from this peer")
		return
	}
	c.sendError(p, req, wire.CodeUnknownType, "unknown type "+strconv.Quote(clipText(string(typ))))
}

// handshakeGrace is how long a handshake whose input waits unread at
// its deadline has before it is looked at again (Unread).
const handshakeGrace = 100 * time.Millisecond

// expireHandshakes closes connections that did not register or say hello in
// time, without an error frame. One whose input the server has not yet
// read is looked at again a grace later: the server's lateness is not
// the peer's.
func (c *Core) expireHandshakes(now int64) {
	ur, _ := c.fx.(Unread)
	var later []hsDeadline
	i := 0
	for ; i < len(c.hsQueue) && c.hsQueue[i].at <= now; i++ {
		d := c.hsQueue[i]
		p := c.peers[d.peer]
		if p == nil || p.kind != peerNew {
			continue
		}
		if now < d.last && ur != nil && ur.Unread(p.id) {
			later = append(later, hsDeadline{peer: p.id, at: now + handshakeGrace.Milliseconds(), last: d.last})
			continue
		}
		c.log.Info("handshake timeout", "peer", p.id, "remote", p.remote)
		c.closePeer(p)
	}
	if i > 0 {
		c.hsQueue = append(c.hsQueue[:0], c.hsQueue[i:]...)
	}
	if len(later) > 0 { // all due at once: one place keeps the deadline order
		j := slices.IndexFunc(c.hsQueue, func(e hsDeadline) bool { return e.at > later[0].at })
		if j < 0 {
			j = len(c.hsQueue)
		}
		c.hsQueue = slices.Insert(c.hsQueue, j, later...)
	}
}

// clipText bounds peer text quoted in an error message.
func clipText(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// distinct counts the different strings in list.
func distinct(list []string) int {
	seen := make(map[string]struct{}, len(list))
	for _, s := range list {
		seen[s] = struct{}{}
	}
	return len(seen)
}

// clipTypes bounds the task types a log record lists, since a register may
// name 1,024 of them.
func clipTypes(types []string) []string {
	if len(types) > 16 {
		return append(types[:16:16], "... "+strconv.Itoa(len(types)-16)+" more")
	}
	return types
}
