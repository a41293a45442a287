package core

import "github.com/apollo11/apollo11/wire"

// messageHandler handles one message from a peer.
type messageHandler func(c *Core, p *peer, m *wire.Message)

// requestHandler answers a client's request. req is already checked.
type requestHandler func(c *Core, p *peer, m *wire.Message, req string)

// The handler tables, one per peer role. A type without a row is refused.
// The error is not_permitted when wire knows it, unknown_type otherwise.
// A new message is a wire.Kind, its senders in wire, and a row here.
var (
	// handshakeHandlers take a new connection's first frame. req is the
	// one its errors carry ("" for an executor's).
	handshakeHandlers = map[wire.Kind]requestHandler{
		wire.KindRegister: func(c *Core, p *peer, m *wire.Message, _ string) { c.register(p, m) },
		wire.KindHello:    (*Core).hello,
	}
	// clientHandlers answer a client's requests after its hello.
	clientHandlers = map[wire.Kind]requestHandler{
		wire.KindSubmit:   (*Core).submit,
		wire.KindQuery:    (*Core).query,
		wire.KindCancel:   (*Core).cancelRequest,
		wire.KindList:     (*Core).list,
		wire.KindStats:    (*Core).stats,
		wire.KindStateGet: (*Core).stateGet,
		wire.KindDebug:    (*Core).setDebug,

		wire.KindRequeue:      (*Core).requeueRequest,
		wire.KindRequeueWhere: (*Core).requeueWhere,
		wire.KindCancelWhere:  (*Core).cancelWhere,
		wire.KindPurgeWhere:   (*Core).purgeWhere,
		wire.KindPause:        func(c *Core, p *peer, m *wire.Message, req string) { c.pauseRequest(p, m, req, true) },
		wire.KindResume:       func(c *Core, p *peer, m *wire.Message, req string) { c.pauseRequest(p, m, req, false) },
		wire.KindStateSet:     func(c *Core, p *peer, m *wire.Message, req string) { c.stateFix(p, m, req, true) },
		wire.KindStateDel:     func(c *Core, p *peer, m *wire.Message, req string) { c.stateFix(p, m, req, false) },
		wire.KindTypeList:     (*Core).typeList,

		wire.KindScheduleAdd:    (*Core).scheduleAdd,
		wire.KindScheduleList:   (*Core).scheduleList,
		wire.KindSchedulePause:  func(c *Core, p *peer, m *wire.Message, req string) { c.scheduleChange(p, m, req, schedPaused) },
		wire.KindScheduleResume: func(c *Core, p *peer, m *wire.Message, req string) { c.scheduleChange(p, m, req, schedResumed) },
		wire.KindScheduleDelete: func(c *Core, p *peer, m *wire.Message, req string) { c.scheduleChange(p, m, req, schedDeleted) },
		wire.KindRunSubmit:      (*Core).runSubmit,
		wire.KindRunQuery:       (*Core).runQuery,
		wire.KindRunList:        (*Core).runList,
		wire.KindRunCancel:      (*Core).runCancel,
		wire.KindRunResume:      (*Core).runResume,

		wire.KindClusterStatus:   (*Core).clusterRequest,
		wire.KindClusterAdd:      (*Core).clusterRequest,
		wire.KindClusterRemove:   (*Core).clusterRequest,
		wire.KindClusterTransfer: (*Core).clusterRequest,
	}
	// executorHandlers take a registered executor's messages.
	executorHandlers = map[wire.Kind]messageHandler{
		wire.KindHeartbeat: (*Core).heartbeat,
		wire.KindStarted:   (*Core).started,
		wire.KindProgress:  (*Core).progress,
		wire.KindResult:    (*Core).result,
		wire.KindStateGet:  (*Core).executorStateGet,
		wire.KindBye:       (*Core).bye,
		wire.KindTypes:     (*Core).execTypes,
	}
)

// clientMessage routes a client's request through clientHandlers.
func (c *Core) clientMessage(p *peer, m *wire.Message) {
	h := clientHandlers[m.Kind()]
	if h == nil {
		c.refuseType(p, m)
		return
	}
	req, ok := c.reqOf(p, m)
	if !ok {
		return
	}
	if !c.serving() && !clusterKinds[m.Kind()] {
		c.notLeader(p, req)
		return
	}
	h(c, p, m, req)
}

// clusterKinds answer on every member (clusterRequest says how).
var clusterKinds = map[wire.Kind]bool{wire.KindClusterStatus: true, wire.KindClusterAdd: true,
	wire.KindClusterRemove: true, wire.KindClusterTransfer: true}

// executorMessage routes an executor's message through executorHandlers.
func (c *Core) executorMessage(p *peer, m *wire.Message) {
	h := executorHandlers[m.Kind()]
	if h == nil {
		c.refuseType(p, m)
		return
	}
	h(c, p, m)
}

// executorStateGet answers an executor's state_get, which carries a req.
func (c *Core) executorStateGet(p *peer, m *wire.Message) {
	if req, ok := c.reqOf(p, m); ok {
		c.stateGet(p, m, req)
	}
}
