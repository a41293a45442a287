package wire_test

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

func TestRefusal(t *testing.T) {
	var d wire.Decoder
	_, _, tooLarge := d.Decode([]byte{0x00, 0x10, 0x00, 0x01})
	_, _, malformed := d.Decode([]byte{0, 0, 0, 3, 'a', '=', 'b'}) // no type
	tests := []struct {
		name string
		err  error
		code wire.Code // "": no refusal
	}{
		{"frame too large", tooLarge, wire.CodeFrameTooLarge},
		{"malformed", malformed, wire.CodeMalformed},
		{"wrapped", fmt.Errorf("reading: %w", malformed), wire.CodeMalformed},
		{"read error", io.ErrUnexpectedEOF, ""},
		{"other error", errors.New("boom"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			frame, ok := wire.Refusal(tc.err)
			if tc.code == "" {
				assert.False(t, ok)
				assert.Nil(t, frame)
				return
			}
			require.True(t, ok)
			m, n, err := d.Decode(frame)
			require.NoError(t, err)
			assert.Equal(t, len(frame), n)
			assert.Equal(t, "error", m.Type())
			assert.Equal(t, string(tc.code), m.Value("code"))
			assert.Equal(t, tc.err.Error(), m.Value("message"))
		})
	}
}

func TestErrorFrame(t *testing.T) {
	var d wire.Decoder
	m, n, err := d.Decode(wire.ErrorFrame(wire.CodeUnavailable, "stopping; try=again\nlater"))
	require.NoError(t, err)
	assert.Positive(t, n)
	assert.Equal(t, "error", m.Type())
	assert.Equal(t, "unavailable", m.Value("code"))
	assert.Equal(t, "stopping; try=again\nlater", m.Value("message"), "escaped and back")
	assert.False(t, m.Has("req"))
	assert.Nil(t, wire.ErrorFrame(wire.CodeBadRequest, "\xff"), "not UTF-8: not encodable")
}
