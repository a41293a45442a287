package core

import (
	"fmt"
	"unsafe"
)

// LoadBatch holds snapshot entries and log records decoded ahead of the
// core. Decoding reads no core state, so a restart can decode one batch
// on another goroutine while the core loads the batch before it
// (Core.LoadBatch). The batch keeps the decoded copies: its inputs may be
// reused once a call returns. A batch is reused after Reset; one
// goroutine at a time may use it.
type LoadBatch struct {
	dec  *LoadDecoder
	ops  []loadOp
	recs []record // recs[i] is ops[i]'s; kept across Reset for their slices
	// chunks are task table chunks made ready for the tasks of the
	// batch whose ids are past any decoded before.
	chunks []*chunk
}

// LoadDecoder is what the batches of one recovery share: interned names
// and the task ids seen so far. Use it from one goroutine.
type LoadDecoder struct {
	// names interns task types and executor ids: a million tasks of one
	// type share one string.
	names map[string]string
	// chunks is one past the highest table chunk a batch made ready.
	chunks uint64
}

// NewLoadBatch returns an empty batch decoding with d.
func NewLoadBatch(d *LoadDecoder) *LoadBatch {
	if d.names == nil {
		d.names = map[string]string{}
	}
	return &LoadBatch{dec: d}
}

// ready makes a table chunk ready for task id unless one was made for it
// or for a higher id already. The core would otherwise fault each page
// of a new chunk in as it stores the first tasks there: a third of a
// restart's time on its goroutine, now spent on the decoder's.
func (b *LoadBatch) ready(id uint64) {
	n := id>>chunkBits + 1
	if n <= b.dec.chunks {
		return
	}
	b.dec.chunks = n
	ch := new(chunk)
	const stride = pageSize / int(unsafe.Sizeof(task{}))
	for i := 0; i < chunkSize; i += stride {
		ch.slots[i].id = 0 // a write, so the page is the chunk's own
	}
	b.chunks = append(b.chunks, ch)
}

// pageSize is the smallest page of the platforms the project ships for.
const pageSize = 4096

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
}

// next returns the record for a new op of kind, reset by the decoder.
func (b *LoadBatch) next(kind loadKind, key uint64) *record {
	b.ops = append(b.ops, loadOp{kind: kind, key: key})
	if len(b.recs) < len(b.ops) {
		b.recs = append(b.recs, record{})
	}
	return &b.recs[len(b.ops)-1]
}

// drop takes back the op next added, whose payload did not decode.
func (b *LoadBatch) drop() { b.ops = b.ops[:len(b.ops)-1] }

// Entry adds an unkeyed snapshot entry.
func (b *LoadBatch) Entry(payload []byte) error {
	r := b.next(loadEntry, 0)
	if err := decodeRecordNames(payload, r, b.dec.names); err != nil {
		b.drop()
		return err
	}
	return nil
}

// Put adds the task entry keyed id of a snapshot part.
func (b *LoadBatch) Put(id uint64, payload []byte) error {
	if err := decodeTaskEntry(id, payload, b.next(loadPut, id), b.dec.names); err != nil {
		b.drop()
		return err
	}
	b.ready(id)
	return nil
}

// Drop adds a part's tombstone of task id.
func (b *LoadBatch) Drop(id uint64) { b.next(loadDrop, id).reset() }

// Record adds the log record at lsn.
func (b *LoadBatch) Record(lsn uint64, payload []byte) error {
	r := b.next(loadRecord, lsn)
	if err := decodeLogRecord(payload, r, b.dec.names); err != nil {
		b.drop()
		return err
	}
	if r.kind == recNew {
		b.ready(r.id)
	}
	return nil
}

// Len is the number of entries and records in the batch.
func (b *LoadBatch) Len() int { return len(b.ops) }

// Reset empties the batch for reuse.
func (b *LoadBatch) Reset() {
	b.ops = b.ops[:0]
	clear(b.chunks)
	b.chunks = b.chunks[:0]
}

// LoadBatch loads a batch into a core being recovered, in order, as
// LoadEntry, LoadTask, DropTask and ReplayRecord would one at a time.
func (c *Core) LoadBatch(b *LoadBatch) error {
	c.tasks.spare = append(c.tasks.spare, b.chunks...)
	for i, op := range b.ops {
		r := &b.recs[i]
		var err error
		switch op.kind {
		case loadEntry:
			err = c.loadRecord(r)
		case loadPut:
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
