package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBatch_RoundTrip(t *testing.T) {
	o := Origin{ID: "127.0.0.1:7001", Term: 9}
	recs := [][]byte{[]byte("one"), {}, []byte("three")}
	b, err := DecodeBatch(EncodeBatch(o, 77, recs))
	require.NoError(t, err)
	assert.Equal(t, o, b.Origin)
	assert.Equal(t, uint64(77), b.LastLSN)
	assert.Equal(t, recs, b.Records)
}

func TestBatch_DamageIsAnError(t *testing.T) {
	full := EncodeBatch(Origin{ID: "a:1", Term: 2}, 3, [][]byte{[]byte("xy"), []byte("z")})
	for n := range len(full) {
		_, err := DecodeBatch(full[:n])
		assert.ErrorIs(t, err, errBadBatch, "cut at %d", n)
	}
	_, err := DecodeBatch(append(full, 0))
	assert.ErrorIs(t, err, errBadBatch, "trailing byte")
	bad := append([]byte{2}, full[1:]...)
	_, err = DecodeBatch(bad)
	assert.ErrorIs(t, err, errBadBatch, "version")
	// A count far above what the bytes can hold allocates nothing big.
	huge := appendBatchHeader(nil, Origin{}, 0, 1<<40)
	_, err = DecodeBatch(huge)
	assert.ErrorIs(t, err, errBadBatch)
}
