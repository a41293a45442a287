//go:build linux

package reliability_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// The cluster group's peers speak the wire by hand, like the rest of the
// suite, so that they see every reply, and they follow the leader as
// protocol section 8.13 says a client must: a hint is followed only to an
// address of their own list, else they try the next. Every request is an
// operation of the history, timed from its first send to its reply; one
// whose connection was lost or timed out has an unknown outcome.

// opTimeout is how long a peer waits for a reply before it takes its
// connection for lost. A leader cut off by a partition never answers.
const opTimeout = 5 * time.Second

// leaderFollower is the part of a peer that finds the leader.
type leaderFollower struct {
	lab   *netLab
	addrs []string
	next  int // the address to try next
}

// advance picks the next address: the hint when it is one of ours.
func (f *leaderFollower) advance(hint string) {
	if i := slices.Index(f.addrs, hint); i >= 0 && hint != "" {
		f.next = i
		return
	}
	f.next = (f.next + 1) % len(f.addrs)
}

// connect dials the addresses in turn until typ (hello or register) is
// taken by the leader; a server that is not a cluster member says no
// role and is taken as it is.
func (f *leaderFollower) connect(ctx context.Context, typ string, kv ...string) (*peer, error) {
	for tries := 0; ctx.Err() == nil; tries++ {
		if tries > 0 && tries%len(f.addrs) == 0 {
			time.Sleep(100 * time.Millisecond)
		}
		addr := f.addrs[f.next]
		conn, err := f.lab.dial(addr, time.Second)
		if err != nil {
			f.advance("")
			continue
		}
		p, err := newPeer(conn)
		if err != nil {
			f.advance("")
			continue
		}
		m, err := p.handshake(typ, nil, kv...)
		if err != nil {
			p.close()
			hint := ""
			if m != nil {
				hint = m.Value("leader")
			}
			f.advance(hint)
			continue
		}
		if role := m.Value("role"); role != "" && role != "leader" {
			p.close()
			f.advance(m.Value("leader"))
			continue
		}
		return p, nil
	}
	return nil, ctx.Err()
}

// clusterClient makes one request at a time and records it.
type clusterClient struct {
	leaderFollower
	id   int
	hist *history
	p    *peer
	seq  int
}

func newClusterClient(lab *netLab, addrs []string, id int, hist *history) *clusterClient {
	return &clusterClient{leaderFollower: leaderFollower{lab: lab, addrs: addrs, next: id % len(addrs)}, id: id, hist: hist}
}

func (c *clusterClient) drop() {
	if c.p != nil {
		c.p.close()
		c.p = nil
	}
}

// request sends a request to the leader and returns its reply. A reply
// not_leader or unavailable changed nothing: the request goes again.
// unknown is true when the connection was lost before the reply.
func (c *clusterClient) request(ctx context.Context, typ string, kv ...string) (m *wire.Message, unknown bool, err error) {
	sent := false
	for ctx.Err() == nil {
		if c.p == nil {
			if c.p, err = c.connect(ctx, "hello", "req", "h"); err != nil {
				return nil, sent, err
			}
		}
		c.seq++
		req := "q" + strconv.Itoa(c.seq)
		sent = true
		if err := c.p.send(typ, append([]string{"req", req}, kv...)...); err != nil {
			c.drop()
			c.advance("")
			return nil, true, nil
		}
		for {
			m, err = c.p.recv(opTimeout)
			if err != nil {
				c.drop()
				c.advance("")
				return nil, true, nil
			}
			if m.Value("req") == req {
				break
			}
		}
		if m.Type() == "error" {
			switch wire.Code(m.Value("code")) {
			case "not_leader":
				c.drop()
				c.advance(m.Value("leader"))
				continue
			case wire.CodeUnavailable:
				time.Sleep(50 * time.Millisecond)
				continue
			}
		}
		return m, false, nil
	}
	return nil, sent, ctx.Err()
}

// submit sends a keyed submit and records it.
func (c *clusterClient) submit(ctx context.Context, key string) (uint64, bool) {
	call := c.hist.now()
	m, unknown, err := c.request(ctx, "submit", "task_type", "work", "key", key, "arg.key", key, "max_attempts", "1000")
	switch {
	case unknown:
		c.hist.add(c.id, subOp(key), call, lostOut)
	case err != nil || m.Type() != "submitted":
		return 0, false // refused, or never sent: nothing happened
	default:
		id, _ := wire.ParseUint(m.Value("task_id"))
		c.hist.add(c.id, subOp(key), call, taskOut{ID: id, Duplicate: m.Value("duplicate") == "true"})
		return id, true
	}
	return 0, false
}

// query asks for a task's state and records it; it returns the state,
// "unknown_task", or "" when no answer came.
func (c *clusterClient) query(ctx context.Context, key string, id uint64) string {
	call := c.hist.now()
	m, unknown, err := c.request(ctx, "query", "task_id", itoa(id))
	switch {
	case unknown || err != nil:
		return "" // a read whose reply was lost tells nothing
	case m.Type() == "task_state":
		c.hist.add(c.id, queryOp(key, id), call, stateOut(m.Value("state")))
		return m.Value("state")
	case m.Type() == "error" && m.Value("code") == "unknown_task":
		c.hist.add(c.id, queryOp(key, id), call, stateOut("unknown_task"))
		return "unknown_task"
	}
	return ""
}

// loadCounts are what the load's peers did.
type loadCounts struct {
	submits, confirmed, unknown, queries, results atomic.Int64
}

// runClient submits new keys, resends its own keys (those whose reply
// was lost first) and queries its tasks, until ctx ends.
func (c *clusterClient) run(ctx context.Context, counts *loadCounts, seed uint64) {
	defer c.drop()
	rng := rand.New(rand.NewPCG(seed, 7))
	type task struct {
		key string
		id  uint64
	}
	var mine []task
	var unsure []string
	for n := 0; ctx.Err() == nil; {
		switch r := rng.IntN(10); {
		case len(unsure) > 0 && r < 3:
			key := unsure[0]
			unsure = unsure[1:]
			if id, ok := c.submit(ctx, key); ok {
				mine = append(mine, task{key, id})
			}
		case len(mine) > 0 && r < 5:
			tk := mine[len(mine)-1-rng.IntN(min(len(mine), 20))]
			c.query(ctx, tk.key, tk.id)
			counts.queries.Add(1)
		case len(mine) > 0 && r < 6:
			tk := mine[rng.IntN(len(mine))]
			c.submit(ctx, tk.key)
		default:
			n++
			key := fmt.Sprintf("c%d-%d", c.id, n)
			counts.submits.Add(1)
			if id, ok := c.submit(ctx, key); ok {
				counts.confirmed.Add(1)
				mine = append(mine, task{key, id})
			} else if ctx.Err() == nil {
				counts.unknown.Add(1)
				unsure = append(unsure, key)
			}
		}
	}
}

// clusterExecutor runs every task it is sent at once (started and
// result in one write) and records each result with its ack. Results
// unacknowledged when its connection is lost have unknown outcomes.
type clusterExecutor struct {
	leaderFollower
	name string
	id   int // its client id in the history
	hist *history
}

type sentResult struct {
	key  string
	id   uint64
	call int64
}

func (e *clusterExecutor) run(ctx context.Context, counts *loadCounts) {
	for ctx.Err() == nil {
		p, err := e.connect(ctx, "register", "executor_id", e.name, "task_types", "work", "slots", "64")
		if err != nil {
			return
		}
		pending := e.serve(ctx, p, counts)
		for _, r := range pending {
			e.hist.add(e.id, resultOp(r.key, r.id), r.call, lostOut)
		}
		e.advance("")
	}
}

// serve runs tasks on p until the connection is lost or ctx ends, and
// returns the results still waiting for their ack.
func (e *clusterExecutor) serve(ctx context.Context, p *peer, counts *loadCounts) map[string]sentResult {
	stop := context.AfterFunc(ctx, p.close)
	defer stop()
	defer p.close()
	var mu sync.Mutex // the writer, shared with the heartbeat
	done := make(chan struct{})
	defer close(done)
	go func() {
		tk := time.NewTicker(300 * time.Millisecond)
		defer tk.Stop()
		for seq := 1; ; seq++ {
			select {
			case <-done:
				return
			case <-tk.C:
			}
			mu.Lock()
			err := p.send("heartbeat", "seq", strconv.Itoa(seq), "running", "")
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	pending := map[string]sentResult{}
	for {
		m, err := p.recv(opTimeout) // pongs come every 300 ms
		if err != nil {
			return pending
		}
		switch m.Type() {
		case "task":
			tid, ver := m.Value("task_id"), m.Value("version")
			id, _ := wire.ParseUint(tid)
			pending[tid+"."+ver] = sentResult{key: m.Value("arg.key"), id: id, call: e.hist.now()}
			mu.Lock()
			_ = p.write("started", "task_id", tid, "version", ver)
			_ = p.write("result", "task_id", tid, "version", ver, "status", "succeeded", "out.done", "1")
			_ = p.flush()
			mu.Unlock()
		case "result_ack":
			tok := m.Value("task_id") + "." + m.Value("version")
			if r, ok := pending[tok]; ok {
				delete(pending, tok)
				e.hist.add(e.id, resultOp(r.key, r.id), r.call, ackOut(m.Value("accepted") == "true"))
				counts.results.Add(1)
			}
		}
	}
}
