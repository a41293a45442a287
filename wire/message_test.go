package wire_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

func TestNewMessage(t *testing.T) {
	m := wire.NewMessage("pong")
	assert.Equal(t, "pong", m.Type())
	assert.Equal(t, 1, m.Len())
	assert.Equal(t, []wire.Field{{Key: "type", Value: "pong"}}, m.Fields)
}

func TestMessage_Type(t *testing.T) {
	assert.Equal(t, "", (&wire.Message{}).Type())
	assert.Equal(t, "x", msg("a", "1", "type", "x").Type())
}

func TestMessage_Get(t *testing.T) {
	m := msg("type", "t", "a", "1", "empty", "")
	tests := []struct {
		key  string
		want string
		ok   bool
	}{
		{"type", "t", true},
		{"a", "1", true},
		{"empty", "", true},
		{"b", "", false},
		{"A", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			v, ok := m.Get(tt.key)
			assert.Equal(t, tt.want, v)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, m.Value(tt.key))
			assert.Equal(t, tt.ok, m.Has(tt.key))
		})
	}
}

func TestMessage_Set(t *testing.T) {
	t.Run("appends a new key", func(t *testing.T) {
		m := wire.NewMessage("t").Set("a", "1").Set("b", "2")
		assert.Equal(t, []string{"type", "t", "a", "1", "b", "2"}, fields(m))
	})
	t.Run("replaces in place", func(t *testing.T) {
		m := wire.NewMessage("t").Set("a", "1").Set("b", "2").Set("a", "3")
		assert.Equal(t, []string{"type", "t", "a", "3", "b", "2"}, fields(m))
	})
}

func TestMessage_Del(t *testing.T) {
	m := msg("type", "t", "a", "1", "b", "2", "c", "3")
	m.Del("b")
	assert.Equal(t, []string{"type", "t", "a", "1", "c", "3"}, fields(m))
	m.Del("missing")
	assert.Equal(t, []string{"type", "t", "a", "1", "c", "3"}, fields(m))
}

func TestMessage_Reset(t *testing.T) {
	m := msg("type", "t", "a", "1")
	c := cap(m.Fields)
	m.Reset()
	assert.Zero(t, m.Len())
	assert.Equal(t, c, cap(m.Fields))
}

func TestMessage_WithPrefix(t *testing.T) {
	m := msg("type", "result", "out.a", "1", "state.set.x", "2", "out.b", "3", "outx", "4", "state.add.y", "-1")
	collect := func(prefix string) []string {
		var kv []string
		for k, v := range m.WithPrefix(prefix) {
			kv = append(kv, k, v)
		}
		return kv
	}
	assert.Equal(t, []string{"a", "1", "b", "3"}, collect(wire.PrefixOut))
	assert.Equal(t, []string{"x", "2"}, collect(wire.PrefixStateSet))
	assert.Equal(t, []string{"y", "-1"}, collect(wire.PrefixStateAdd))
	assert.Equal(t, []string{"set.x", "2", "add.y", "-1"}, collect(wire.PrefixState))
	assert.Nil(t, collect(wire.PrefixArg))

	t.Run("break stops", func(t *testing.T) {
		n := 0
		for range m.WithPrefix(wire.PrefixOut) {
			n++
			break
		}
		assert.Equal(t, 1, n)
	})
}

func TestMessage_Clone(t *testing.T) {
	t.Run("deep copy of a decoded message", func(t *testing.T) {
		buf := frame("type=result\nout.a=1\nerror=x\\ey")
		var d wire.Decoder
		m, _, err := d.Decode(buf)
		require.NoError(t, err)
		c := m.Clone()
		clear(buf)
		_, _, err = d.Decode(frame("type=zzzzzz\nzzzzz=zzzzz\nzzzzz=z\\ez"))
		require.Error(t, err) // duplicate; it still scribbles on the decoder
		assert.Equal(t, []string{"type", "result", "out.a", "1", "error", "x=y"}, fields(c))
	})
	t.Run("independent fields", func(t *testing.T) {
		m := msg("type", "t", "a", "1")
		c := m.Clone()
		m.Set("a", "2")
		c.Set("b", "3")
		assert.Equal(t, []string{"type", "t", "a", "2"}, fields(m))
		assert.Equal(t, []string{"type", "t", "a", "1", "b", "3"}, fields(c))
	})
	t.Run("empty", func(t *testing.T) {
		assert.Zero(t, (&wire.Message{}).Clone().Len())
	})
	t.Run("allocations", func(t *testing.T) {
		m := taskMessage()
		allocs := testing.AllocsPerRun(100, func() { _ = m.Clone() })
		assert.LessOrEqual(t, allocs, 3.0, "message, fields and one block for every key and value")
	})
}

func TestMessage_String(t *testing.T) {
	m := msg("a", "x=y", "type", "t", "b", "line1\nline2\\")
	assert.Equal(t, "type=t\na=x\\ey\nb=line1\\nline2\\\\", m.String())
}
