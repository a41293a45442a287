package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStream_RoundTripAndDamage(t *testing.T) {
	var b bytes.Buffer
	want := [][]byte{[]byte("a"), {}, bytes.Repeat([]byte("x"), 70_000), []byte("last")}
	require.NoError(t, WriteStream(&b, 42, func(w *SnapshotWriter) error {
		for _, p := range want {
			if err := w.Add(p); err != nil {
				return err
			}
		}
		return nil
	}))
	var got [][]byte
	lsn, err := ReadStream(bytes.NewReader(b.Bytes()), func(p []byte) error {
		got = append(got, bytes.Clone(p))
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, uint64(42), lsn)
	assert.Equal(t, want, got)

	// Every flipped byte and every cut is refused, never loaded as whole.
	for _, i := range []int{0, 9, 13, 21, 30, b.Len() - 5, b.Len() - 1} {
		d := bytes.Clone(b.Bytes())
		d[i] ^= 0x40
		_, err := ReadStream(bytes.NewReader(d), func([]byte) error { return nil })
		assert.ErrorIs(t, err, ErrBadSnapshot, "flip at %d", i)
	}
	for _, n := range []int{0, 5, 20, 25, b.Len() - 12, b.Len() - 1} {
		_, err := ReadStream(bytes.NewReader(b.Bytes()[:n]), func([]byte) error { return nil })
		assert.ErrorIs(t, err, ErrBadSnapshot, "cut at %d", n)
	}
	// An entry refused by the caller stops the read with its error.
	boom := errors.New("boom")
	_, err = ReadStream(bytes.NewReader(b.Bytes()), func([]byte) error { return boom })
	assert.ErrorIs(t, err, boom)
}

func TestStream_FillErrorWritesNoTrailer(t *testing.T) {
	var b bytes.Buffer
	err := WriteStream(&b, 1, func(w *SnapshotWriter) error { return fmt.Errorf("no") })
	require.Error(t, err)
	_, err = ReadStream(bytes.NewReader(b.Bytes()), func([]byte) error { return nil })
	assert.ErrorIs(t, err, ErrBadSnapshot)
}
