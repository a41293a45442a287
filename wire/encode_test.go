package wire_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

func TestAppendFrame(t *testing.T) {
	tests := []struct {
		name    string
		msg     *wire.Message
		payload string
	}{
		{"type only", msg("type", "pong"), "type=pong"},
		{"type first, then fields in order", msg("b", "2", "type", "t", "a", "1", "c", "3"), "type=t\nb=2\na=1\nc=3"},
		{"empty values", msg("type", "heartbeat", "seq", "1", "running", ""), "type=heartbeat\nseq=1\nrunning="},
		{"escapes", msg("type", "t", "v", "a=b\\c\nd"), "type=t\nv=a\\eb\\\\c\\nd"},
		{"escaped type", msg("type", "=\n\\"), "type=\\e\\n\\\\"},
		{"unicode as is", msg("type", "t", "note", "日本 ✓"), "type=t\nnote=日本 ✓"},
		{"64-byte key", msg("type", "t", key64, "v"), "type=t\n" + key64 + "=v"},
		{"state.setx is not a bare prefix", msg("type", "t", "state.setx", "1"), "type=t\nstate.setx=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.AppendFrame(nil, tt.msg)
			require.NoError(t, err)
			assert.Equal(t, string(frame(tt.payload)), string(got))
		})
	}
	t.Run("appends after existing bytes", func(t *testing.T) {
		dst := []byte("prefix")
		got, err := wire.AppendFrame(dst, msg("type", "pong"))
		require.NoError(t, err)
		assert.Equal(t, "prefix"+string(frame("type=pong")), string(got))
	})
	t.Run("1024 keys", func(t *testing.T) {
		m := mustDecodePayload(t, manyKeys(1024))
		got, err := wire.AppendFrame(nil, m)
		require.NoError(t, err)
		assert.Equal(t, string(frame(manyKeys(1024))), string(got))
	})
}

func TestAppendFrame_refuses(t *testing.T) {
	over := mustDecodePayload(t, manyKeys(1024))
	over.Set("one_more", "x")
	tests := []struct {
		name    string
		msg     *wire.Message
		wantErr error
	}{
		{"no type", msg("a", "1"), wire.ErrKey},
		{"empty message", &wire.Message{}, wire.ErrKey},
		{"empty key", msg("type", "t", "", "v"), wire.ErrKey},
		{"upper-case key", msg("type", "t", "Key", "v"), wire.ErrKey},
		{"space in key", msg("type", "t", "a b", "v"), wire.ErrKey},
		{"= in key", msg("type", "t", "a=b", "v"), wire.ErrKey},
		{"LF in key", msg("type", "t", "a\nb", "v"), wire.ErrKey},
		{"non-ascii key", msg("type", "t", "ké", "v"), wire.ErrKey},
		{"65-byte key", msg("type", "t", key65, "v"), wire.ErrKey},
		{"bare arg.", msg("type", "t", "arg.", "v"), wire.ErrKey},
		{"bare out.", msg("type", "t", "out.", "v"), wire.ErrKey},
		{"bare state.", msg("type", "t", "state.", "v"), wire.ErrKey},
		{"bare state.set.", msg("type", "t", "state.set.", "v"), wire.ErrKey},
		{"bare state.add.", msg("type", "t", "state.add.", "v"), wire.ErrKey},
		{"duplicate key", msg("type", "t", "a", "1", "a", "2"), wire.ErrKey},
		{"duplicate type", msg("type", "t", "type", "u"), wire.ErrKey},
		{"duplicate among many", mustDecodePayload(t, manyKeys(200)).Set("x", "1"), nil}, // filled in below
		{"1025 keys", over, wire.ErrKey},
		{"invalid UTF-8 value", msg("type", "t", "v", "a\xffb"), wire.ErrValue},
		{"invalid UTF-8 type", msg("type", "\xc0\xaf"), wire.ErrValue},
		{"truncated UTF-8", msg("type", "t", "v", "abc\xe2\x82"), wire.ErrValue},
	}
	dupMany := mustDecodePayload(t, manyKeys(200))
	dupMany.Fields = append(dupMany.Fields, wire.Field{Key: "k0150", Value: "again"})
	tests[16].msg, tests[16].wantErr = dupMany, wire.ErrKey

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]byte, 0, 64)
			dst = append(dst, "before"...)
			got, err := wire.AppendFrame(dst, tt.msg)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.wantErr)
			assert.Equal(t, "before", string(got), "dst is returned unchanged")
		})
	}
}

func TestBuilder(t *testing.T) {
	tests := []struct {
		name    string
		build   func(b *wire.Builder)
		payload string
	}{
		{"type only", func(*wire.Builder) {}, "type=t"},
		{"Str", func(b *wire.Builder) { b.Str("note", "a=b\n\\") }, "type=t\nnote=a\\eb\\n\\\\"},
		{"Str empty", func(b *wire.Builder) { b.Str("error", "") }, "type=t\nerror="},
		{"PrefixStr arg.", func(b *wire.Builder) { b.PrefixStr(wire.PrefixArg, "src", "x=y") }, "type=t\narg.src=x\\ey"},
		{"PrefixStr out.", func(b *wire.Builder) { b.PrefixStr(wire.PrefixOut, "n", "1") }, "type=t\nout.n=1"},
		{"PrefixStr state.", func(b *wire.Builder) { b.PrefixStr(wire.PrefixState, "k", "v") }, "type=t\nstate.k=v"},
		{"PrefixStr state.set.", func(b *wire.Builder) { b.PrefixStr(wire.PrefixStateSet, "k", "v") }, "type=t\nstate.set.k=v"},
		{"PrefixStr state.add.", func(b *wire.Builder) { b.PrefixStr(wire.PrefixStateAdd, "k", "-1") }, "type=t\nstate.add.k=-1"},
		{"PrefixStr state.setx", func(b *wire.Builder) { b.PrefixStr(wire.PrefixState, "setx", "v") }, "type=t\nstate.setx=v"},
		{"PrefixStr 64 bytes", func(b *wire.Builder) { b.PrefixStr(wire.PrefixState, key64[6:], "v") }, "type=t\nstate." + key64[6:] + "=v"},
		{"Uint", func(b *wire.Builder) { b.Uint("a", 0); b.Uint("b", math.MaxUint64) }, "type=t\na=0\nb=18446744073709551615"},
		{"Int", func(b *wire.Builder) { b.Int("a", math.MinInt64); b.Int("b", -1); b.Int("c", math.MaxInt64) }, "type=t\na=-9223372036854775808\nb=-1\nc=9223372036854775807"},
		{"Bool", func(b *wire.Builder) { b.Bool("a", true); b.Bool("b", false) }, "type=t\na=true\nb=false"},
		{"List empty", func(b *wire.Builder) { b.List("running", nil) }, "type=t\nrunning="},
		{"List", func(b *wire.Builder) { b.List("running", []string{"1.0", "2.3"}) }, "type=t\nrunning=1.0,2.3"},
		{"List escapes items", func(b *wire.Builder) { b.List("l", []string{"a=b", "c"}) }, "type=t\nl=a\\eb,c"},
		{"Raw", func(b *wire.Builder) { b.Raw([]byte("a=1\nb=x\\ey"), 2); b.Str("c", "3") }, "type=t\na=1\nb=x\\ey\nc=3"},
		{"Raw empty adds nothing", func(b *wire.Builder) { b.Raw(nil, 0); b.RawString("", 0) }, "type=t"},
		{"RawString", func(b *wire.Builder) { b.RawString("out.a=1", 1) }, "type=t\nout.a=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := wire.Begin([]byte("before"), "t")
			tt.build(&b)
			require.NoError(t, b.Err())
			assert.Equal(t, len(tt.payload), b.Len())
			got, err := b.Finish()
			require.NoError(t, err)
			assert.Equal(t, "before"+string(frame(tt.payload)), string(got))
			mustDecodePayload(t, tt.payload) // the builder writes valid payloads only
		})
	}
}

func TestBuilder_refuses(t *testing.T) {
	tests := []struct {
		name    string
		typ     string
		build   func(b *wire.Builder)
		wantErr error
	}{
		{"bad type value", "\xff", func(*wire.Builder) {}, wire.ErrValue},
		{"Str bad key", "t", func(b *wire.Builder) { b.Str("Key", "v") }, wire.ErrKey},
		{"Str bare prefix", "t", func(b *wire.Builder) { b.Str("state.set.", "v") }, wire.ErrKey},
		{"Str bad value", "t", func(b *wire.Builder) { b.Str("k", "\xff") }, wire.ErrValue},
		{"PrefixStr state. set.", "t", func(b *wire.Builder) { b.PrefixStr("state.", "set.", "v") }, wire.ErrKey},
		{"PrefixStr state. add.", "t", func(b *wire.Builder) { b.PrefixStr("state.", "add.", "v") }, wire.ErrKey},
		{"PrefixStr empty name", "t", func(b *wire.Builder) { b.PrefixStr(wire.PrefixArg, "", "v") }, wire.ErrKey},
		{"PrefixStr empty name after state.set.", "t", func(b *wire.Builder) { b.PrefixStr(wire.PrefixStateSet, "", "v") }, wire.ErrKey},
		{"PrefixStr upper case", "t", func(b *wire.Builder) { b.PrefixStr(wire.PrefixArg, "X", "v") }, wire.ErrKey},
		{"PrefixStr 65 bytes", "t", func(b *wire.Builder) { b.PrefixStr(wire.PrefixState, key64[5:], "v") }, wire.ErrKey},
		{"PrefixStr bad value", "t", func(b *wire.Builder) { b.PrefixStr(wire.PrefixOut, "x", "\xff") }, wire.ErrValue},
		{"PrefixStr empty prefix, bare prefix name", "t", func(b *wire.Builder) { b.PrefixStr("", "arg.", "v") }, wire.ErrKey},
		{"PrefixStr split bare prefix", "t", func(b *wire.Builder) { b.PrefixStr("state.set", ".", "v") }, wire.ErrKey},
		{"PrefixStr bad prefix", "t", func(b *wire.Builder) { b.PrefixStr("Arg.", "x", "v") }, wire.ErrKey},
		{"Uint bad key", "t", func(b *wire.Builder) { b.Uint("", 1) }, wire.ErrKey},
		{"Int bad key", "t", func(b *wire.Builder) { b.Int("a b", 1) }, wire.ErrKey},
		{"Bool bad key", "t", func(b *wire.Builder) { b.Bool(key65, true) }, wire.ErrKey},
		{"List bad key", "t", func(b *wire.Builder) { b.List("L", []string{"a"}) }, wire.ErrKey},
		{"List bad item", "t", func(b *wire.Builder) { b.List("l", []string{"a", "\xff"}) }, wire.ErrValue},
		{"1025 keys", "t", func(b *wire.Builder) {
			for i := range wire.MaxKeys {
				b.Uint(fmt.Sprintf("k%d", i), uint64(i))
			}
		}, wire.ErrKey},
		{"1025 keys through Raw", "t", func(b *wire.Builder) { b.RawString("a=1", wire.MaxKeys) }, wire.ErrKey},
		{"1025 keys after an early error", "t", func(b *wire.Builder) {
			b.Str("A", "v")
			b.RawString("a=1", wire.MaxKeys)
		}, wire.ErrKey},
		{"the first error sticks", "t", func(b *wire.Builder) {
			b.Str("Bad", "v")
			b.Str("good", "\xff")
			b.Str("good", "v")
		}, wire.ErrKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := wire.Begin([]byte("before"), wire.Kind(tt.typ))
			tt.build(&b)
			if !strings.HasPrefix(tt.name, "1025 keys") { // the count is checked by Finish
				assert.ErrorIs(t, b.Err(), tt.wantErr)
			}
			got, err := b.Finish()
			assert.ErrorIs(t, err, tt.wantErr)
			assert.Equal(t, "before", string(got), "the buffer is returned as before Begin")
		})
	}
}

// roundTripMessages are messages m for which decode(encode(m)) == m must
// hold (spec section 2).
func roundTripMessages(tb testing.TB) []*wire.Message {
	var all strings.Builder
	for c := range 0x80 {
		all.WriteByte(byte(c))
	}
	all.WriteString("é✓日本🚀\U0010FFFF\uFFFD")
	return []*wire.Message{
		msg("type", "pong"),
		msg("type", ""),
		msg("type", "t", "empty", ""),
		msg("type", "t", "a", "\\"),
		msg("type", "t", "a", "\n"),
		msg("type", "t", "a", "="),
		msg("type", "t", "a", "\\\\n\\e=\n=\\"),
		msg("type", "t", "a", "\\n"),
		msg("type", "t", "a", "\n\n\n"),
		msg("type", "t", "all_bytes", all.String()),
		msg("type", "=\\\n", "x", "y"),
		msg("type", "t", "trailing", "ends with LF\n"),
		msg("type", "t", "trailing", "ends with backslash\\"),
		msg("b", "2", "type", "t", "a", "1"), // type is moved first, see below
		taskMessage(),
		resultMessage(20),
		mustDecodePayload(tb, manyKeys(1024)),
	}
}

func TestAppendFrame_roundTrip(t *testing.T) {
	for i, m := range roundTripMessages(t) {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			buf := mustEncode(t, m)
			var d wire.Decoder
			got, n, err := d.Decode(buf)
			require.NoError(t, err)
			require.NotNil(t, got)
			assert.Equal(t, len(buf), n)
			assert.Equal(t, typeFirst(m), got.Clone())
			assert.Equal(t, m.String(), string(buf[wire.HeaderLen:]), "String renders the payload")
		})
	}
}

// typeFirst returns m with its type field moved first, the order in which
// encoders write keys.
func typeFirst(m *wire.Message) *wire.Message {
	out := &wire.Message{Fields: []wire.Field{{Key: "type", Value: m.Type()}}}
	for _, f := range m.Fields {
		if f.Key != "type" {
			out.Fields = append(out.Fields, f)
		}
	}
	return out
}

// TestAppendFrame_canonical: every valid payload with type first and no
// trailing LF re-encodes to itself byte for byte; any other valid payload
// re-encodes to one that decodes the same.
func TestAppendFrame_canonical(t *testing.T) {
	for _, c := range payloadCases {
		if c.want == nil {
			continue
		}
		t.Run(c.String(), func(t *testing.T) {
			m := mustDecodePayload(t, c.payload)
			got := mustEncode(t, m)
			canonical := strings.HasPrefix(c.payload, "type=") && !strings.HasSuffix(c.payload, "\n")
			if canonical {
				assert.Equal(t, string(frame(c.payload)), string(got))
				return
			}
			assert.Equal(t, typeFirst(m), mustDecodePayload(t, string(got[wire.HeaderLen:])))
		})
	}
}

func TestMustKey(t *testing.T) {
	for _, k := range []string{"type", "task_id", "arg.src", "state.setx", key64} {
		assert.Equal(t, k, wire.MustKey(k).String())
	}
	assert.Equal(t, "", wire.Key{}.String())
	for _, k := range []string{"", "Key", "a b", key65, "arg.", "state.add."} {
		assert.Panics(t, func() { wire.MustKey(k) }, "MustKey(%q)", k)
	}
}

func TestBuilder_K(t *testing.T) {
	var (
		kTaskID = wire.MustKey("task_id")
		kDelta  = wire.MustKey("delta")
		kWait   = wire.MustKey("wait")
		kNote   = wire.MustKey("note")
	)
	t.Run("same bytes as the validating methods", func(t *testing.T) {
		b := wire.Begin(nil, "t")
		b.UintK(kTaskID, 12)
		b.IntK(kDelta, -3)
		b.BoolK(kWait, true)
		b.StrK(kNote, "a=b\n")
		got, err := b.Finish()
		require.NoError(t, err)

		v := wire.Begin(nil, "t")
		v.Uint("task_id", 12)
		v.Int("delta", -3)
		v.Bool("wait", true)
		v.Str("note", "a=b\n")
		want, err := v.Finish()
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	})
	t.Run("every key length, with and without spare room", func(t *testing.T) {
		for n := 1; n <= wire.MaxKeyLen; n++ {
			name := strings.Repeat("k", n)
			k := wire.MustKey(name)
			for _, spare := range []int{0, 1, 15, 16, 17, 18, 64} {
				for _, num := range []uint64{0, 7, 9, 10, 12345} {
					dst := make([]byte, 3, 3+spare)
					copy(dst, "abc")
					b := wire.Begin(dst, "t")
					b.UintK(k, num)
					b.PlainK(k, "0f")
					b.UintK(k, num)
					got, err := b.Finish()
					require.NoError(t, err)
					v := wire.Begin([]byte("abc"), "t")
					v.Uint(name, num)
					v.Str(name, "0f")
					v.Uint(name, num)
					want, err := v.Finish()
					require.NoError(t, err)
					require.Equal(t, string(want), string(got), "key length %d, spare %d, value %d", n, spare, num)
				}
			}
		}
	})
	t.Run("the zero Key is refused", func(t *testing.T) {
		b := wire.Begin([]byte("before"), "t")
		b.StrK(wire.Key{}, "v")
		got, err := b.Finish()
		assert.ErrorIs(t, err, wire.ErrKey)
		assert.Equal(t, "before", string(got))
		// With room to spare, by the one-digit path too.
		b = wire.Begin(append(make([]byte, 0, 256), "before"...), "t")
		b.UintK(wire.Key{}, 1)
		got, err = b.Finish()
		assert.ErrorIs(t, err, wire.ErrKey)
		assert.Equal(t, "before", string(got))
	})
	t.Run("bad value", func(t *testing.T) {
		b := wire.Begin(nil, "t")
		b.StrK(kNote, "\xff")
		_, err := b.Finish()
		assert.ErrorIs(t, err, wire.ErrValue)
	})
}
