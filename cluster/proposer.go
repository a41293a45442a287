package cluster

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// applier is the part of *raft.Raft the proposer uses.
type applier interface {
	Apply(cmd []byte, timeout time.Duration) raft.ApplyFuture
}

// maxInFlight bounds the entries proposed and not yet committed. While
// they are committed, new records gather into the next entry: the group
// commit of a replicated log, as the disk log's fsync groups records.
const maxInFlight = 4

// maxBatchBytes ends an entry early, so that one entry stays well below
// what a follower must take in one append.
const maxBatchBytes = 4 << 20

// Proposer is the group commit over Raft. The main control appends its
// change records; each is numbered (its LSN). All records waiting go
// into one entry. Once a majority has committed and applied it,
// onDurable reports the last LSN of the entry. A failed entry reports
// nothing: its records may never commit, and the leadership is lost.
// After a failure no later entry of that leadership is proposed or
// reported: its LSN would release the failed entry's frames too.
type Proposer struct {
	r         applier
	onDurable func(lsn uint64)
	onFail    func(gen uint64, err error)

	mu      sync.Mutex
	wake    chan struct{} // a record waits, or the proposer closes
	origin  Origin        // zero Term: not leading, records are dropped
	gen     uint64        // counts Lead calls: the leadership an entry was taken in
	failed  uint64        // the newest leadership with a failed entry
	recs    []byte        // the records waiting, length-prefixed
	count   int
	lastLSN uint64
	closed  bool

	// proposing is held from taking an entry until Raft has it, so
	// that Settle can wait out an entry taken under an older origin.
	proposing sync.Mutex

	slots chan struct{} // in flight
	done  chan inflight // to the waiter, in order
	wg    sync.WaitGroup
}

type inflight struct {
	f   raft.ApplyFuture
	lsn uint64
	gen uint64
}

// NewProposer starts a proposer on r. onDurable and onFail run on the
// proposer's own goroutine, in order. onFail gets the failed entry's
// leadership, as Lead numbered it.
func NewProposer(r applier, onDurable func(lsn uint64), onFail func(gen uint64, err error)) *Proposer {
	p := &Proposer{r: r, onDurable: onDurable, onFail: onFail, wake: make(chan struct{}, 1),
		slots: make(chan struct{}, maxInFlight), done: make(chan inflight, maxInFlight)}
	p.wg.Add(2)
	go p.run()
	go p.wait()
	return p
}

// Append queues a record and returns its LSN. It never blocks on Raft,
// so the main control may call it under its lock. While no leadership
// is set the record is dropped: it can never commit.
func (p *Proposer) Append(payload []byte) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastLSN++
	if p.origin.Term == 0 || p.closed {
		return p.lastLSN
	}
	p.recs = binary.AppendUvarint(p.recs, uint64(len(payload)))
	p.recs = append(p.recs, payload...)
	p.count++
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return p.lastLSN
}

// LastLSN is the number of the latest record appended.
func (p *Proposer) LastLSN() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastLSN
}

// Lead sets the leadership that the next entries come from, and returns
// its number. A zero term ends it: the records waiting are dropped, as
// they can never commit.
func (p *Proposer) Lead(o Origin) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.origin = o
	p.gen++
	if o.Term == 0 {
		p.recs, p.count = p.recs[:0], 0
	}
	return p.gen
}

// Settle waits until no entry taken before it is still on its way to
// Raft. After Lead(Origin{}) and Settle, nothing of the old leadership
// can reach the log, so a Barrier then covers all it ever proposed.
// Never call it under a lock that Raft's apply path takes.
func (p *Proposer) Settle() {
	p.proposing.Lock()
	defer p.proposing.Unlock()
}

// Close stops the proposer. Records not yet proposed are dropped.
func (p *Proposer) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	p.wg.Wait()
}

// take returns the next entry to propose and its leadership, or nil
// once closed.
func (p *Proposer) take() ([]byte, uint64, uint64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, 0, 0, false
	}
	if p.count == 0 || p.origin.Term == 0 {
		return nil, 0, 0, true
	}
	// Cut at maxBatchBytes, after one record at least.
	end, n := 0, 0
	for n < p.count && (n == 0 || end < maxBatchBytes) {
		l, k := binary.Uvarint(p.recs[end:])
		end += k + int(l)
		n++
	}
	last := p.lastLSN - uint64(p.count-n)
	entry := appendBatchHeader(make([]byte, 0, end+64), p.origin, last, n)
	entry = append(entry, p.recs[:end]...)
	rest := copy(p.recs, p.recs[end:])
	p.recs, p.count = p.recs[:rest], p.count-n
	if rest == 0 && cap(p.recs) > 4*maxBatchBytes {
		p.recs = nil // a burst grew it: let it go
	}
	return entry, last, p.gen, true
}

func (p *Proposer) run() {
	defer p.wg.Done()
	defer close(p.done)
	for range p.wake {
		for {
			p.slots <- struct{}{} // one more in flight, or wait for a commit
			p.proposing.Lock()
			entry, lsn, gen, ok := p.take()
			if !ok || entry == nil {
				p.proposing.Unlock()
				<-p.slots
				if !ok {
					return
				}
				break
			}
			f := p.r.Apply(entry, 0)
			p.proposing.Unlock()
			p.done <- inflight{f: f, lsn: lsn, gen: gen}
		}
	}
}

// wait reports the entries in the order they were proposed. Raft
// commits in that order, so the LSNs reported only grow.
func (p *Proposer) wait() {
	defer p.wg.Done()
	for e := range p.done {
		err := e.f.Error()
		<-p.slots
		p.mu.Lock()
		if err != nil && e.gen == p.gen {
			// Nothing more of this leadership may go to Raft.
			p.origin = Origin{}
			p.recs, p.count = p.recs[:0], 0
		}
		if err != nil {
			p.failed = max(p.failed, e.gen)
		}
		report := e.gen > p.failed
		p.mu.Unlock()
		switch {
		case err != nil:
			p.onFail(e.gen, err)
		case report:
			p.onDurable(e.lsn)
		}
	}
}
