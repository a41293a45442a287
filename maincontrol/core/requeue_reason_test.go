package core

import (
	"testing"

	"github.com/apollo11/apollo11/wire"
)

// A kept requeue reason must not borrow the read buffer, which is reused.
func TestRequeue_ReasonIsCopied(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	id := h.submit(cl, "task_type", "x", "max_attempts", "1")
	ex := h.executor("e1", "x", 1)
	h.failTask(ex, id, "boom")
	h.c.Closed(ex)
	payload := []byte("type=requeue\nreq=rq\ntask_id=" + itoa(id) + "\nreason=fixed the disk")
	var dec wire.Decoder
	m, err := dec.DecodePayload(payload)
	if err != nil {
		t.Fatal(err)
	}
	h.c.Handle(cl, m)
	for i := range payload {
		payload[i] = 'X'
	}
	h.fx.frames[cl] = nil
	q := h.query(cl, id)
	if got := q.Value("requeue_reason"); got != "fixed the disk" {
		t.Fatalf("requeue_reason = %q after the read buffer was reused", got)
	}
}
