package core

import (
	"testing"

	"github.com/apollo11/apollo11/wire"
)

// A kept progress note must not borrow the read buffer, which is reused.
func TestProgress_NoteIsCopied(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	id := h.submit(cl, "task_type", "x")
	ex := h.executor("e1", "x", 1)
	tid, ver := h.task(ex)
	if tid != id {
		t.Fatal(tid)
	}
	payload := []byte("type=progress\ntask_id=" + itoa(id) + "\nversion=" + itoa(ver) + "\npercent=10\nnote=half way")
	var dec wire.Decoder
	m, err := dec.DecodePayload(payload)
	if err != nil {
		t.Fatal(err)
	}
	h.c.Handle(ex, m)
	for i := range payload {
		payload[i] = 'X'
	}
	q := h.query(cl, id)
	if got := q.Value("progress_note"); got != "half way" {
		t.Fatalf("progress_note = %q after the read buffer was reused", got)
	}
}
