package core

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// A label given on submit is kept through the log, a restart and a
// snapshot, and query, TaskInfo and the inspector show it.
func TestLabel_PersistedAndShown(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	id := h.submit(cl, "task_type", "t", "label", "nightly batch\n7")
	plain := h.submit(cl, "task_type", "t")
	assert.Equal(t, "nightly batch\n7", h.query(cl, id).Value("label"))
	assert.False(t, h.query(cl, plain).Has("label"), "no label, no key")
	h.checkReplay()

	info, ok := h.c.Task(id)
	require.True(t, ok)
	assert.Equal(t, "nightly batch\n7", info.Label)
	for k, v := range info.Fields() {
		assert.Equal(t, "label", k)
		assert.Equal(t, "nightly batch\n7", v)
	}
	d, err := DescribeRecord(h.fx.records[0])
	require.NoError(t, err)
	assert.Contains(t, d.Text, "label=nightly batch\n7")

	entries := snapshotEntries(t, h.c)
	h.restartFrom(entries, len(h.fx.records))
	cl = h.client()
	assert.Equal(t, "nightly batch\n7", h.query(cl, id).Value("label"), "from the snapshot")
	h.restart()
	cl = h.client()
	assert.Equal(t, "nightly batch\n7", h.query(cl, id).Value("label"), "from the log")
	assert.False(t, h.query(cl, plain).Has("label"))
}

// A label over MaxLabelLen bytes, counted after unescaping, is refused
// with bad_request naming the key, and makes no task.
func TestLabel_TooLong(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	h.submit(cl, "task_type", "t", "label", strings.Repeat("x", MaxLabelLen))
	h.send(cl, "submit", "req", "s", "task_type", "t", "label", strings.Repeat("é", MaxLabelLen/2+1))
	m := h.expectErr(cl, wire.CodeBadRequest)
	assert.Contains(t, m.Value("message"), "label")
	assert.Contains(t, m.Value("message"), "256 bytes")
	assert.Len(t, h.fx.records, 1, "nothing recorded for the refused submit")
}

// A label counts toward the bytes tasks hold.
func TestLabel_CountsTowardBytes(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	before := h.c.pendingBytes
	h.submit(cl, "task_type", "t")
	plain := h.c.pendingBytes - before
	h.submit(cl, "task_type", "t", "label", "twelve bytes")
	assert.Equal(t, plain+12, h.c.pendingBytes-before-plain)
}

// Records and snapshot entries without a label keep the bytes format v1
// gave them, so data dirs written before labels read the same, and those
// written now read in older binaries (which ignore the trailing fields).
func TestLabel_V1BytesKept(t *testing.T) {
	n := record{kind: recNew, id: 3, typ: "t", priority: 1, maxAttempts: 3, at: 100, due: 100, state: Pending,
		key: "k", argKeys: 1, args: "arg.a=1"}
	// kind, id, type, priority, max_attempts, timeout, at, due, state, key,
	// trace, deps, arg count, args: as format v1 wrote them.
	assert.Equal(t, "01"+"03"+"0174"+"01"+"03"+"00"+"c801"+"c801"+"02"+"016b"+"00"+"00"+"01"+"076172672e613d31",
		hex.EncodeToString(appendRecord(nil, &n)))
	v1 := appendRecord(nil, &n)
	n.fields[fieldLabel] = "L"
	labelled := appendRecord(nil, &n)
	assert.Equal(t, v1, labelled[:len(v1)], "the label comes after every v1 field")
	assert.Equal(t, []byte{1, 1, 'L'}, labelled[len(v1):], "a count, then the value")
}

// A newer binary's further fields are read past and dropped; a count
// longer than the record is damage.
func TestTaskFields_Decode(t *testing.T) {
	var f fieldVals
	d := dec{b: []byte{3, 1, 'a', 1, 'b', 0, 0xff}}
	d.fields(&f)
	require.NoError(t, d.err)
	assert.Equal(t, "a", f[fieldLabel])
	assert.Equal(t, []byte{0xff}, d.b, "bytes after the fields are left for a newer reader")

	d = dec{b: []byte{9, 1, 'a'}}
	d.fields(&f)
	require.ErrorIs(t, d.err, ErrCorrupt)
	d = dec{b: []byte{1, 5, 'a'}}
	d.fields(&f)
	require.ErrorIs(t, d.err, ErrCorrupt)
}
