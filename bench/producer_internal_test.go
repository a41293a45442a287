package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// Error codes are counted under keys of their own: a decoded value
// borrows the read buffer, which the next read overwrites (h14 saw
// "already wai=" in a report).
func TestProducer_ErrorCodesOwnTheirKeys(t *testing.T) {
	p := newProducer(nil, NewPacer(time.Now(), 0, 1, 0, 1), &Config{Window: 1}, time.Now())
	buf := wire.ErrorFrame(wire.CodeBadRequest, "x")
	m, _, err := (&wire.Decoder{}).Decode(buf)
	require.NoError(t, err)
	p.reply(m)
	for i := range buf {
		buf[i] = 'z' // the next read lands here
	}
	assert.Equal(t, map[string]int64{"bad_request": 1}, p.codes)
}
