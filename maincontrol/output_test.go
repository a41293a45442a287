package maincontrol

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTakeOutput_KeepsBuffers pins the two-buffer rotation of a
// connection's output: a call with nothing to write (a wake after the
// connection's own read already flushed) must keep the buffer it holds,
// and written buffers come back as the spare, so that steady traffic
// allocates nothing for output.
func TestTakeOutput_KeepsBuffers(t *testing.T) {
	s := &Server{cfg: Config{MaxInflight: DefaultMaxInflight}}
	s.flow = newFlow(&s.cfg, nil, &s.wakes)
	a, b := make([]byte, 0, 4096), make([]byte, 0, 4096)
	cn := &conn{out: a, spare: b, queued: true}

	out, closeNow := s.takeOutput(cn)
	assert.Nil(t, out, "nothing to write")
	assert.False(t, closeNow)
	assert.False(t, cn.queued)
	require.Equal(t, 4096, cap(cn.out), "the empty buffer is kept")
	assert.Equal(t, &a[:1][0], &cn.out[:1][0], "the same buffer, not the spare")
	assert.Equal(t, 4096, cap(cn.spare), "the spare is kept")

	cn.out = append(cn.out, "frame"...)
	out, _ = s.takeOutput(cn)
	assert.Equal(t, "frame", string(out))
	assert.Equal(t, &b[:1][0], &cn.out[:1][0], "the spare takes the next frames")
	assert.Nil(t, cn.spare, "the written buffer becomes the spare once written")
}
