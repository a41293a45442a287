package cluster

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeFuture is an ApplyFuture the test completes.
type fakeFuture struct {
	raft.ApplyFuture
	done chan error
}

func (f *fakeFuture) Error() error { return <-f.done }

type fakeRaft struct {
	mu      sync.Mutex
	entries [][]byte
	futures []*fakeFuture
	got     chan struct{}
	hold    chan struct{} // when set, Apply signals calling, then waits on it
	calling chan struct{}
}

func (r *fakeRaft) Apply(cmd []byte, _ time.Duration) raft.ApplyFuture {
	if r.hold != nil {
		r.calling <- struct{}{}
		<-r.hold
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f := &fakeFuture{done: make(chan error, 1)}
	r.entries = append(r.entries, cmd)
	r.futures = append(r.futures, f)
	r.got <- struct{}{}
	return f
}

func (r *fakeRaft) entry(i int) (Batch, *fakeFuture) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := DecodeBatch(r.entries[i])
	if err != nil {
		panic(err)
	}
	return b, r.futures[i]
}

func TestProposer_GroupsWaitingRecordsAndReportsInOrder(t *testing.T) {
	fr := &fakeRaft{got: make(chan struct{}, 100)}
	durable := make(chan uint64, 100)
	failed := make(chan error, 10)
	p := NewProposer(fr, func(l uint64) { durable <- l }, func(_ uint64, err error) { failed <- err })
	defer p.Close()

	assert.Equal(t, uint64(1), p.Append([]byte("dropped: not leading")))
	p.Lead(Origin{ID: "m1", Term: 3})
	assert.Equal(t, uint64(2), p.Append([]byte("a")))
	<-fr.got
	b, f0 := fr.entry(0)
	assert.Equal(t, Origin{ID: "m1", Term: 3}, b.Origin)
	assert.Equal(t, uint64(2), b.LastLSN)
	assert.Equal(t, [][]byte{[]byte("a")}, b.Records)

	// Fill the in-flight slots, then records gather into one entry.
	for i := 1; i < maxInFlight; i++ {
		p.Append([]byte{byte(i)})
		<-fr.got
	}
	last := uint64(0)
	for range 5 {
		last = p.Append([]byte("g"))
	}
	select {
	case <-fr.got:
		t.Fatal("proposed past the in-flight bound")
	case <-time.After(20 * time.Millisecond):
	}
	f0.done <- nil
	assert.Equal(t, uint64(2), <-durable)
	<-fr.got
	b, _ = fr.entry(maxInFlight)
	assert.Len(t, b.Records, 5, "the waiting records share one entry")
	assert.Equal(t, last, b.LastLSN)

	// Ending the leadership drops what waits; what was proposed still
	// reports as it commits.
	p.Lead(Origin{})
	for i := 1; i <= maxInFlight; i++ {
		_, f := fr.entry(i)
		f.done <- nil
		<-durable
	}
	p.Append([]byte("late"))
	select {
	case <-fr.got:
		t.Fatal("proposed a record made after the leadership ended")
	case <-time.After(20 * time.Millisecond):
	}
}

func TestProposer_CutsLargeBursts(t *testing.T) {
	fr := &fakeRaft{got: make(chan struct{}, 100)}
	durable := make(chan uint64, 100)
	p := NewProposer(fr, func(l uint64) { durable <- l }, func(uint64, error) {})
	defer p.Close()
	// Hold the proposer: fill its slots first.
	p.Lead(Origin{ID: "m", Term: 1})
	for range maxInFlight {
		p.Append([]byte("x"))
		<-fr.got
	}
	big := make([]byte, maxBatchBytes/2+1)
	var last uint64
	for range 5 {
		last = p.Append(big)
	}
	for i := range maxInFlight {
		_, f := fr.entry(i)
		f.done <- nil
	}
	n, lsn := 0, uint64(0)
	for i := maxInFlight; lsn < last; i++ {
		<-fr.got
		b, f := fr.entry(i)
		assert.LessOrEqual(t, len(b.Records), 2)
		n += len(b.Records)
		lsn = b.LastLSN
		f.done <- nil
	}
	assert.Equal(t, 5, n)
}

// After an entry fails, a later entry of the same leadership that
// commits must not be reported: its LSN would release the frames of
// the failed entry's records, which are in no log.
func TestProposer_AFailedEntryStopsItsLeadership(t *testing.T) {
	fr := &fakeRaft{got: make(chan struct{}, 100)}
	durable := make(chan uint64, 100)
	failed := make(chan error, 10)
	p := NewProposer(fr, func(l uint64) { durable <- l }, func(_ uint64, err error) { failed <- err })
	defer p.Close()
	p.Lead(Origin{ID: "m1", Term: 5})
	p.Append([]byte("r1"))
	<-fr.got
	p.Append([]byte("r2"))
	<-fr.got
	_, f1 := fr.entry(0)
	_, f2 := fr.entry(1)
	f1.done <- errors.New("leadership lost")
	f2.done <- nil // raft re-elected this member and committed it
	require.EqualError(t, <-failed, "leadership lost")
	p.Append([]byte("r3: after the failure"))
	select {
	case l := <-durable:
		t.Fatalf("LSN %d reported durable after an earlier entry failed", l)
	case <-fr.got:
		t.Fatal("proposed a record of a leadership whose entry failed")
	case <-time.After(50 * time.Millisecond):
	}

	// A new leadership reports again.
	p.Lead(Origin{ID: "m1", Term: 6})
	l := p.Append([]byte("r4"))
	<-fr.got
	b, f := fr.entry(2)
	assert.Equal(t, Origin{ID: "m1", Term: 6}, b.Origin)
	f.done <- nil
	assert.Equal(t, l, <-durable)
}

// An entry taken under one origin is never handed to Raft after the
// origin changed: Settle waits for it to reach Raft first.
func TestProposer_SettleWaitsForAnEntryOnItsWay(t *testing.T) {
	fr := &fakeRaft{got: make(chan struct{}, 100), hold: make(chan struct{}), calling: make(chan struct{}, 1)}
	p := NewProposer(fr, func(uint64) {}, func(uint64, error) {})
	defer p.Close()
	p.Lead(Origin{ID: "m1", Term: 5})
	p.Append([]byte("r1"))
	<-fr.calling // taken under term 5, not yet in Raft
	p.Lead(Origin{})
	settled := make(chan struct{})
	go func() { p.Settle(); close(settled) }()
	select {
	case <-settled:
		t.Fatal("Settle returned while an entry of the old origin was on its way")
	case <-time.After(50 * time.Millisecond):
	}
	close(fr.hold) // the entry reaches Raft; only then does Settle return
	<-fr.got
	<-settled
	p.Lead(Origin{ID: "m1", Term: 6})
	p.Append([]byte("r2"))
	<-fr.got
	b, f := fr.entry(1)
	assert.Equal(t, uint64(6), b.Origin.Term)
	_, f0 := fr.entry(0)
	f0.done <- nil
	f.done <- nil
}
