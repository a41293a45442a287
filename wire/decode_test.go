package wire_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// payloadCase is one row of the spec section 2 table: a payload and either
// the fields it decodes to, in order, or the byte offset of the
// *MalformedError it must produce.
type payloadCase struct {
	rule    string
	name    string
	payload string
	want    []string // key, value, ...; nil: malformed at off
	off     int
}

func (c payloadCase) String() string { return c.rule + "/" + c.name }

var (
	key64 = strings.Repeat("k", 64)
	key65 = strings.Repeat("k", 65)
)

// payloadCases covers every rule of spec section 2 with accepted and
// rejected payloads. Offsets count payload bytes (the header excluded).
var payloadCases = []payloadCase{
	// UTF-8 text. Invalid UTF-8 is malformed.
	{rule: "utf8", name: "ascii", payload: "type=t", want: []string{"type", "t"}},
	{rule: "utf8", name: "multibyte", payload: "type=t\nnote=héllo ✓ 日本 🚀", want: []string{"type", "t", "note", "héllo ✓ 日本 🚀"}},
	{rule: "utf8", name: "control bytes are text", payload: "type=t\nv=\x00\x01\t\x7f", want: []string{"type", "t", "v", "\x00\x01\t\x7f"}},
	{rule: "utf8", name: "invalid byte", payload: "type=t\nnote=\xff", off: 12},
	{rule: "utf8", name: "overlong encoding", payload: "type=t\nn=\xc0\xaf", off: 9},
	{rule: "utf8", name: "surrogate half", payload: "type=t\nn=\xed\xa0\x80", off: 9},
	{rule: "utf8", name: "truncated sequence at end", payload: "type=t\nn=\xe2\x82", off: 9},
	{rule: "utf8", name: "invalid byte first", payload: "\xfftype=t", off: 0},
	{rule: "utf8", name: "invalid byte in key", payload: "type=t\nk\x80=v", off: 8},

	// Lines separated by LF; one trailing LF is valid; empty lines
	// elsewhere are malformed.
	{rule: "lf", name: "no trailing LF", payload: "type=t\na=1", want: []string{"type", "t", "a", "1"}},
	{rule: "lf", name: "one trailing LF", payload: "type=t\na=1\n", want: []string{"type", "t", "a", "1"}},
	{rule: "lf", name: "one trailing LF after empty value", payload: "type=t\na=\n", want: []string{"type", "t", "a", ""}},
	{rule: "lf", name: "CR is a value byte", payload: "type=t\na=1\r", want: []string{"type", "t", "a", "1\r"}},
	{rule: "lf", name: "two trailing LFs", payload: "type=t\n\n", off: 7},
	{rule: "lf", name: "empty line inside", payload: "type=t\n\na=1", off: 7},
	{rule: "lf", name: "leading empty line", payload: "\ntype=t", off: 0},
	{rule: "lf", name: "payload is one LF", payload: "\n", off: 0},
	{rule: "lf", name: "raw LF in a value splits the line", payload: "type=t\na=b\nc", off: 11},

	// Each line is key=value, split at the first '='.
	{rule: "split", name: "first = ends the key", payload: "type=t\nk=\\ev", want: []string{"type", "t", "k", "=v"}},
	{rule: "split", name: "empty value", payload: "type=t\na=", want: []string{"type", "t", "a", ""}},
	{rule: "split", name: "second raw = is in the value", payload: "type=t\na=b=c", off: 10},
	{rule: "split", name: "line without =", payload: "type=t\nabc", off: 7},
	{rule: "split", name: "only line without =", payload: "type", off: 0},
	{rule: "split", name: "line of text without =", payload: "type=t\nhello world", off: 7},
	{rule: "split", name: "empty key", payload: "type=t\n=v", off: 7},
	{rule: "split", name: "empty key first", payload: "=v\ntype=t", off: 0},
	{rule: "split", name: "empty key and value", payload: "type=t\n=", off: 7},

	// key: a-z 0-9 _ . - only.
	{rule: "alphabet", name: "every key byte", payload: "type=t\nabcdefghijklmnopqrstuvwxyz0123456789_.-=1", want: []string{"type", "t", "abcdefghijklmnopqrstuvwxyz0123456789_.-", "1"}},
	{rule: "alphabet", name: "upper case first", payload: "type=t\nKey=v", off: 7},
	{rule: "alphabet", name: "upper case inside", payload: "type=t\nkEy=v", off: 8},
	{rule: "alphabet", name: "upper case type", payload: "Type=t", off: 0},
	{rule: "alphabet", name: "space", payload: "type=t\na b=v", off: 8},
	{rule: "alphabet", name: "colon", payload: "type=t\na:b=v", off: 8},
	{rule: "alphabet", name: "non-ascii letter", payload: "type=t\nké=v", off: 8},
	{rule: "alphabet", name: "backslash", payload: "type=t\na\\e=1", off: 8},

	// key: 1 to 64 bytes.
	{rule: "key length", name: "1 byte", payload: "type=t\na=v", want: []string{"type", "t", "a", "v"}},
	{rule: "key length", name: "64 bytes", payload: "type=t\n" + key64 + "=v", want: []string{"type", "t", key64, "v"}},
	{rule: "key length", name: "65 bytes", payload: "type=t\n" + key65 + "=v", off: 7},
	{rule: "key length", name: "65 bytes first", payload: key65 + "=v\ntype=t", off: 0},

	// A key that is exactly a namespace prefix is malformed.
	{rule: "bare prefix", name: "arg.", payload: "type=t\narg.=v", off: 7},
	{rule: "bare prefix", name: "out.", payload: "type=t\nout.=v", off: 7},
	{rule: "bare prefix", name: "state.", payload: "type=t\nstate.=v", off: 7},
	{rule: "bare prefix", name: "state.set.", payload: "type=t\nstate.set.=v", off: 7},
	{rule: "bare prefix", name: "state.add.", payload: "type=t\nstate.add.=1", off: 7},
	{rule: "bare prefix", name: "prefixed names and look-alikes", payload: lines(
		"type=t", "arg.x=1", "out.x=2", "state.x=3", "state.set.x=4", "state.add.x=-5",
		"state.setx=6", "state.set=7", "args.=8", "x.arg.=9", ".=10", "state.get.=11", "arg=12",
	), want: []string{
		"type", "t", "arg.x", "1", "out.x", "2", "state.x", "3", "state.set.x", "4", "state.add.x", "-5",
		"state.setx", "6", "state.set", "7", "args.", "8", "x.arg.", "9", ".", "10", "state.get.", "11", "arg", "12",
	}},

	// A duplicate key is malformed.
	{rule: "duplicate", name: "distinct look-alikes", payload: "type=t\na.b=1\na.c=2\nb.a=3\nab=4\nba=5", want: []string{"type", "t", "a.b", "1", "a.c", "2", "b.a", "3", "ab", "4", "ba", "5"}},
	{rule: "duplicate", name: "same key twice", payload: "type=t\na=1\na=2", off: 11},
	{rule: "duplicate", name: "same value too", payload: "type=t\na=1\na=1", off: 11},
	{rule: "duplicate", name: "type twice", payload: "type=t\ntype=u", off: 7},
	{rule: "duplicate", name: "before type", payload: "a=1\na=2\ntype=t", off: 4},
	{rule: "duplicate", name: "over 32 keys", payload: manyKeys(40) + "\nk0005=x", off: len(manyKeys(40)) + 1},
	{rule: "duplicate", name: "over 32 keys, type", payload: manyKeys(40) + "\ntype=x", off: len(manyKeys(40)) + 1},
	{rule: "duplicate", name: "1024 keys", payload: manyKeys(1023) + "\nk0500=x", off: len(manyKeys(1023)) + 1},
	{rule: "duplicate", name: "1024 keys, last and first", payload: manyKeys(1023) + "\ntype=x", off: len(manyKeys(1023)) + 1},
	{rule: "duplicate", name: "1024 keys, neighbours", payload: manyKeys(1023) + "\nk1022=x", off: len(manyKeys(1023)) + 1},

	// Escapes: \\ \n \e; anything else with a backslash, and a raw '=', is
	// malformed.
	{rule: "escape", name: "backslash", payload: "type=t\na=\\\\", want: []string{"type", "t", "a", "\\"}},
	{rule: "escape", name: "LF", payload: "type=t\na=\\n", want: []string{"type", "t", "a", "\n"}},
	{rule: "escape", name: "equals", payload: "type=t\na=\\e", want: []string{"type", "t", "a", "="}},
	{rule: "escape", name: "escaped backslash then n", payload: "type=t\na=x\\\\ny", want: []string{"type", "t", "a", "x\\ny"}},
	{rule: "escape", name: "all in a row", payload: "type=t\na=\\e\\e\\n\\\\\nb=1", want: []string{"type", "t", "a", "==\n\\", "b", "1"}},
	{rule: "escape", name: "in type", payload: "type=a\\eb", want: []string{"type", "a=b"}},
	{rule: "escape", name: "raw =", payload: "type=t\na=b=c", off: 10},
	{rule: "escape", name: "raw = first", payload: "type=t\na==", off: 9},
	{rule: "escape", name: "lone backslash at end", payload: "type=t\na=b\\", off: 10},
	{rule: "escape", name: "lone backslash before LF", payload: "type=t\na=\\\nb=1", off: 9},
	{rule: "escape", name: `\x`, payload: "type=t\na=\\x", off: 9},
	{rule: "escape", name: `\t`, payload: "type=t\na=\\t", off: 9},
	{rule: "escape", name: `\E`, payload: "type=t\na=\\E", off: 9},
	{rule: "escape", name: `\N`, payload: "type=t\na=\\N", off: 9},
	{rule: "escape", name: `\=`, payload: "type=t\na=\\=", off: 9},
	{rule: "escape", name: `valid then \x`, payload: "type=t\na=\\n\\x", off: 11},

	// At most 1,024 keys.
	{rule: "key count", name: "1024", payload: manyKeys(1024), want: manyKeysFields(1024)},
	{rule: "key count", name: "1025", payload: manyKeys(1025), off: len(manyKeys(1024)) + 1},

	// Every payload has a type key.
	{rule: "type", name: "type not first", payload: "a=1\ntype=t", want: []string{"a", "1", "type", "t"}},
	{rule: "type", name: "empty type value", payload: "type=", want: []string{"type", ""}},
	{rule: "type", name: "missing", payload: "a=1", off: 0},
	{rule: "type", name: "missing, look-alikes", payload: "types=t\ntyp=t\ntype.=t", off: 0},

	// Unknown keys are kept by the codec (the server ignores them).
	{rule: "unknown keys", name: "kept in order", payload: "type=t\nzzz=1\nyyy=2", want: []string{"type", "t", "zzz", "1", "yyy", "2"}},
}

// manyKeysFields is what manyKeys(n) decodes to.
func manyKeysFields(n int) []string {
	kv := []string{"type", "t"}
	for i := 1; i < n; i++ {
		kv = append(kv, fmt.Sprintf("k%04d", i), "v")
	}
	return kv
}

// fields flattens a message to key, value, ...
func fields(m *wire.Message) []string {
	kv := []string{}
	for _, f := range m.Fields {
		kv = append(kv, f.Key, f.Value)
	}
	return kv
}

// requireMalformed asserts err is a *MalformedError at payload offset off.
func requireMalformed(tb testing.TB, err error, off int) {
	tb.Helper()
	var me *wire.MalformedError
	require.ErrorAs(tb, err, &me)
	assert.ErrorIs(tb, err, wire.ErrMalformed)
	assert.NotErrorIs(tb, err, wire.ErrFrameTooLarge)
	assert.Equal(tb, off, me.Offset, "offset; reason %q", me.Reason)
	assert.NotEmpty(tb, me.Reason)
}

func TestDecoder_DecodePayload(t *testing.T) {
	for _, c := range payloadCases {
		t.Run(c.String(), func(t *testing.T) {
			var d wire.Decoder
			m, err := d.DecodePayload([]byte(c.payload))
			if c.want == nil {
				assert.Nil(t, m)
				requireMalformed(t, err, c.off)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, m)
			assert.Equal(t, c.want, fields(m))
		})
	}
	t.Run("empty payload", func(t *testing.T) {
		var d wire.Decoder
		m, err := d.DecodePayload(nil)
		assert.Nil(t, m)
		requireMalformed(t, err, 0)
	})
}

// TestDecoder_Decode_payloadRules runs the section 2 table through whole
// frames: the same verdicts, offsets still counted in the payload.
func TestDecoder_Decode_payloadRules(t *testing.T) {
	for _, c := range payloadCases {
		t.Run(c.String(), func(t *testing.T) {
			buf := append(frame(c.payload), "trailing bytes of the next frame"...)
			var d wire.Decoder
			m, n, err := d.Decode(buf)
			if c.want == nil {
				assert.Nil(t, m)
				assert.Zero(t, n)
				requireMalformed(t, err, c.off)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, m)
			assert.Equal(t, wire.HeaderLen+len(c.payload), n, "consumed header+length")
			assert.Equal(t, c.want, fields(m))
		})
	}
}

func TestDecoder_Decode(t *testing.T) {
	t.Run("zero length is malformed", func(t *testing.T) {
		for _, buf := range [][]byte{header(0), append(header(0), "type=t"...)} {
			var d wire.Decoder
			m, n, err := d.Decode(buf)
			assert.Nil(t, m)
			assert.Zero(t, n)
			requireMalformed(t, err, 0)
		}
	})
	t.Run("partial header needs more", func(t *testing.T) {
		f := frame("type=t")
		for i := range wire.HeaderLen {
			var d wire.Decoder
			m, n, err := d.Decode(f[:i])
			assert.Nil(t, m)
			assert.Zero(t, n)
			assert.NoError(t, err, "%d header bytes", i)
		}
	})
	t.Run("partial payload needs more", func(t *testing.T) {
		f := frame("type=t\na=1")
		for i := wire.HeaderLen; i < len(f); i++ {
			var d wire.Decoder
			m, n, err := d.Decode(f[:i])
			assert.Nil(t, m)
			assert.Zero(t, n)
			assert.NoError(t, err, "%d bytes", i)
		}
	})
	t.Run("header alone past the limit is too large", func(t *testing.T) {
		tests := []struct {
			name     string
			maxFrame int
			size     uint32
			tooLarge bool
		}{
			{"default limit, exactly 1 MiB", 0, 1 << 20, false},
			{"default limit, 1 MiB + 1", 0, 1<<20 + 1, true},
			{"default limit, max uint32", 0, 0xFFFFFFFF, true},
			{"negative limit means default", -1, 1<<20 + 1, true},
			{"small limit, at it", 16, 16, false},
			{"small limit, one over", 16, 17, true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				d := wire.NewDecoder(tt.maxFrame)
				m, n, err := d.Decode(header(tt.size)) // no payload yet
				assert.Nil(t, m)
				assert.Zero(t, n)
				if !tt.tooLarge {
					assert.NoError(t, err, "within the limit: need more")
					return
				}
				var fe *wire.FrameTooLargeError
				require.ErrorAs(t, err, &fe)
				assert.ErrorIs(t, err, wire.ErrFrameTooLarge)
				assert.NotErrorIs(t, err, wire.ErrMalformed)
				assert.Equal(t, tt.size, fe.Size)
				wantMax := tt.maxFrame
				if wantMax <= 0 {
					wantMax = wire.DefaultMaxFrame
				}
				assert.Equal(t, wantMax, fe.Max)
			})
		}
	})
	t.Run("a frame at the limit decodes", func(t *testing.T) {
		payload := "type=t\nv=" + strings.Repeat("x", 16-len("type=t\nv="))
		require.Len(t, payload, 16)
		d := wire.NewDecoder(16)
		m, n, err := d.Decode(frame(payload))
		require.NoError(t, err)
		require.NotNil(t, m)
		assert.Equal(t, 20, n)
	})
	t.Run("many frames in one buffer", func(t *testing.T) {
		want := []*wire.Message{taskMessage(), resultMessage(3), msg("type", "pong", "seq", "7")}
		var buf []byte
		for _, m := range want {
			buf = append(buf, mustEncode(t, m)...)
		}
		var d wire.Decoder
		got, n := decodeAll(t, &d, buf)
		assert.Equal(t, len(buf), n)
		assert.Equal(t, want, got)
	})
	t.Run("one frame spanning many reads", func(t *testing.T) {
		f := mustEncode(t, taskMessage())
		var d wire.Decoder
		var pending []byte
		for i, c := range f {
			pending = append(pending, c)
			m, n, err := d.Decode(pending)
			require.NoError(t, err)
			if i < len(f)-1 {
				require.Nil(t, m, "complete after %d of %d bytes", i+1, len(f))
				continue
			}
			require.NotNil(t, m)
			assert.Equal(t, len(f), n)
			assert.Equal(t, taskMessage(), m.Clone())
		}
	})
	t.Run("the decoder is reusable after an error", func(t *testing.T) {
		var d wire.Decoder
		_, _, err := d.Decode(frame("type=t\nA=1"))
		require.Error(t, err)
		m, _, err := d.Decode(frame("type=t\na=1"))
		require.NoError(t, err)
		assert.Equal(t, []string{"type", "t", "a", "1"}, fields(m))
	})
}

// TestDecoder_DecodePayload_reuse checks that nothing from one payload leaks
// into the verdict on the next, in particular the duplicate-key set used for
// big payloads.
func TestDecoder_DecodePayload_reuse(t *testing.T) {
	var d wire.Decoder
	big := manyKeys(300)
	_, err := d.DecodePayload([]byte(big))
	require.NoError(t, err)

	// The same keys again, in another order: no key is a duplicate of the
	// previous payload's.
	ls := strings.Split(big, "\n")
	for i, j := 0, len(ls)-1; i < j; i, j = i+1, j-1 {
		ls[i], ls[j] = ls[j], ls[i]
	}
	m, err := d.DecodePayload([]byte(lines(ls...)))
	require.NoError(t, err)
	assert.Equal(t, 300, m.Len())

	_, err = d.DecodePayload([]byte("type=t\nk0001=1\nk0001=2"))
	requireMalformed(t, err, 15)

	_, err = d.DecodePayload([]byte(big + "\nk0299=x"))
	requireMalformed(t, err, len(big)+1)

	m, err = d.DecodePayload([]byte("type=t\nk0001=1"))
	require.NoError(t, err)
	assert.Equal(t, []string{"type", "t", "k0001", "1"}, fields(m))
}

func TestDecoder_Header(t *testing.T) {
	d := wire.NewDecoder(100)
	size, ok, err := d.Header([]byte{0, 0, 0})
	assert.False(t, ok)
	assert.NoError(t, err)
	assert.Zero(t, size)

	size, ok, err = d.Header(header(100))
	assert.True(t, ok)
	assert.NoError(t, err)
	assert.Equal(t, 100, size)

	_, ok, err = d.Header(header(101))
	assert.True(t, ok)
	assert.ErrorIs(t, err, wire.ErrFrameTooLarge)

	_, ok, err = d.Header(header(0))
	assert.True(t, ok)
	requireMalformed(t, err, 0)
}

// TestDecoder_Decode_borrows documents the borrowing contract: a decoded
// message views the caller's buffer; Clone makes a copy that survives any
// later change to that buffer.
func TestDecoder_Decode_borrows(t *testing.T) {
	buf := frame("type=task\ntrace_id=abc\nnote=x\\ny")
	var d wire.Decoder
	m, _, err := d.Decode(buf)
	require.NoError(t, err)
	owned := m.Clone()

	for i := range buf {
		buf[i] = 'Z'
	}
	assert.Equal(t, wire.Field{Key: "ZZZZ", Value: "ZZZZ"}, m.Fields[0], "a decoded message borrows the input buffer")

	// The message itself (and escaped values) belong to the decoder until
	// its next call.
	_, _, err = d.Decode(frame("type=other\nnote=\\e\\e\\e"))
	require.NoError(t, err)
	assert.Equal(t, "other", m.Type(), "the decoder reuses its message")

	assert.Equal(t, []string{"type", "task", "trace_id", "abc", "note", "x\ny"}, fields(owned))
}

func TestMalformedError_Error(t *testing.T) {
	var d wire.Decoder
	_, err := d.DecodePayload([]byte("type=t\nA=1"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "byte 7")
	assert.True(t, errors.Is(err, wire.ErrMalformed))
}

func TestFrameTooLargeError_Error(t *testing.T) {
	err := error(&wire.FrameTooLargeError{Size: 2000, Max: 1000})
	assert.Contains(t, err.Error(), "2000")
	assert.Contains(t, err.Error(), "1000")
	assert.True(t, errors.Is(err, wire.ErrFrameTooLarge))
	assert.False(t, errors.Is(err, wire.ErrMalformed))
}
