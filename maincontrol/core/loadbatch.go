package core

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/apollo11/apollo11/snapshot"
)

// LoadBatch is a run of snapshot entries and log records for a core
// being recovered. Decoding reads no core state, so a restart fills a
// batch on one goroutine, decodes it on another (Decode) and loads it on
// the core's (Core.LoadBatch), in order, while later batches are read and
// decoded. Each step hands the batch on: one goroutine at a time uses it.
type LoadBatch struct {
	ops  []loadOp
	buf  []byte   // the payloads, copied
	recs []record // recs[i] is ops[i]'s, decoded; kept across Reset for their slices
	// high is one past the highest table chunk of a put so far, in this
	// batch and the ones it follows; above is the same before it.
	high, above uint64
	// chunks are task table chunks made ready by Decode for the puts of
	// chunks above any batch before this one put to.
	chunks  []*chunk
	err     error // from Decode
	decoded bool
}

// LoadDecoder interns the task types and executor ids a decoding
// goroutine reads: a million tasks of one type share one string.
type LoadDecoder struct{ names interner }

type loadKind uint8

const (
	loadEntry  loadKind = iota + 1 // an unkeyed snapshot entry (LoadEntry)
	loadPut                        // a task entry of a part (LoadTask)
	loadDrop                       // a tombstone of a part (DropTask)
	loadRecord                     // a log record (ReplayRecord)
)

type loadOp struct {
	kind loadKind
	key  uint64 // the task id of a put or drop, the LSN of a record
	end  int    // the payload is buf up to end, from the op before's end
}

func (b *LoadBatch) add(kind loadKind, key uint64, payload []byte) {
	b.buf = append(b.buf, payload...)
	b.ops = append(b.ops, loadOp{kind: kind, key: key, end: len(b.buf)})
	b.decoded = false
}

// Entry adds an unkeyed snapshot entry.
func (b *LoadBatch) Entry(payload []byte) { b.add(loadEntry, 0, payload) }

// Put adds the task (or run) entry keyed id of a snapshot part.
func (b *LoadBatch) Put(id uint64, payload []byte) {
	b.add(loadPut, id, payload)
	if !isRunKey(id) {
		b.high = max(b.high, id>>chunkBits+1)
	}
}

// Drop adds a part's tombstone of task id.
func (b *LoadBatch) Drop(id uint64) { b.add(loadDrop, id, nil) }

// Record adds the log record at lsn.
func (b *LoadBatch) Record(lsn uint64, payload []byte) { b.add(loadRecord, lsn, payload) }

// Len is the number of entries and records in the batch.
func (b *LoadBatch) Len() int { return len(b.ops) }

// Bytes is the size of the payloads in the batch.
func (b *LoadBatch) Bytes() int { return len(b.buf) }

// Cap is the size the batch's payload buffer has grown to.
func (b *LoadBatch) Cap() int { return cap(b.buf) }

// Follow starts an empty batch after prev: Decode makes chunks ready only
// for ids past every put of the batches before, so each chunk once.
func (b *LoadBatch) Follow(prev *LoadBatch) {
	b.above = max(prev.above, prev.high)
	b.high = b.above
}

// Reset empties the batch for reuse. The decoded records let go of their
// strings, which would otherwise outlive tasks dropped since.
func (b *LoadBatch) Reset() {
	for i := range min(len(b.ops), len(b.recs)) {
		b.recs[i].reset()
	}
	b.ops, b.buf = b.ops[:0], b.buf[:0]
	clear(b.chunks)
	b.chunks = b.chunks[:0]
	b.high, b.above, b.err, b.decoded = 0, 0, nil, false
}

// Decode decodes the batch with d. The first error is kept for
// Core.LoadBatch, which returns it in its turn.
func (b *LoadBatch) Decode(d *LoadDecoder) {
	for len(b.recs) < len(b.ops) {
		b.recs = append(b.recs, record{})
	}
	b.decoded = true
	start, ready := 0, b.above
	for i, op := range b.ops {
		p, r := b.buf[start:op.end], &b.recs[i]
		start = op.end
		var err error
		switch op.kind {
		case loadEntry:
			if err = decodeRecordNames(p, r, &d.names); err != nil {
				err = fmt.Errorf("snapshot entry: %w", err)
			}
		case loadPut:
			if isRunKey(op.key) {
				if err = decodeRunEntry(op.key, p, r, &d.names); err != nil {
					err = fmt.Errorf("snapshot run %d: %w", op.key&^snapshot.RunKeys, err)
				}
				break
			}
			if err = decodeTaskEntry(op.key, p, r, &d.names); err != nil {
				err = fmt.Errorf("snapshot task %d: %w", op.key, err)
			}
			if n := op.key>>chunkBits + 1; n > ready {
				ready = n
				b.chunks = append(b.chunks, readyChunk())
			}
		case loadRecord:
			if err = decodeLogRecord(p, r, &d.names); err != nil {
				err = fmt.Errorf("replay of record %d: %w", op.key, err)
			}
		}
		if err != nil {
			b.err = err
			return
		}
	}
}

// readyChunk returns a zero chunk with every page faulted in. The core
// would otherwise fault them in as it stores the first tasks there, a
// third of a restart's time on its goroutine.
func readyChunk() *chunk {
	ch := new(chunk)
	const stride = pageSize / int(unsafe.Sizeof(task{}))
	for i := 0; i < chunkSize; i += stride {
		ch.slots[i].id = 0 // a write, so the page is the chunk's own
	}
	return ch
}

// pageSize is the smallest page of the platforms the project ships for.
const pageSize = 4096

// LoadBatch loads a decoded batch into a core being recovered, in order,
// as LoadEntry, LoadTask, DropTask and ReplayRecord would one at a time.
func (c *Core) LoadBatch(b *LoadBatch) error {
	if b.err != nil {
		return b.err
	}
	if !b.decoded {
		return errors.New("core: LoadBatch of a batch not decoded")
	}
	c.tasks.spare = append(c.tasks.spare, b.chunks...)
	for i, op := range b.ops {
		r := &b.recs[i]
		var err error
		switch op.kind {
		case loadEntry:
			err = c.loadRecord(r)
		case loadPut:
			if isRunKey(op.key) {
				c.putRun(r)
				break
			}
			if err = c.putTask(r); err != nil {
				err = fmt.Errorf("snapshot task %d: %w", op.key, err)
			}
		case loadDrop:
			err = c.DropTask(op.key)
		case loadRecord:
			if err = c.replay(r); err != nil {
				err = fmt.Errorf("replay of record %d: %w", op.key, err)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
