package wire

import (
	"iter"
	"strings"
)

// Field is one key=value line. In a decoded message both strings may borrow
// from the decoder's input buffer.
type Field struct {
	Key   string
	Value string
}

// Message is an ordered list of fields. Key order carries no meaning on the
// wire, but it is kept so that encoding is deterministic. `type` comes
// first, then the other keys in the order they were set.
type Message struct {
	Fields []Field
}

// NewMessage returns a message of the given type.
func NewMessage(typ Kind) *Message {
	return &Message{Fields: []Field{{Key: "type", Value: string(typ)}}}
}

// Type returns the value of the `type` key, or "".
func (m *Message) Type() string {
	v, _ := m.Get("type")
	return v
}

// Len returns the number of fields.
func (m *Message) Len() int { return len(m.Fields) }

// Get returns the value of key k and whether it is present.
func (m *Message) Get(k string) (string, bool) {
	for i := range m.Fields {
		if m.Fields[i].Key == k {
			return m.Fields[i].Value, true
		}
	}
	return "", false
}

// Value returns the value of key k, or "" when it is absent.
func (m *Message) Value(k string) string {
	v, _ := m.Get(k)
	return v
}

// Has reports whether key k is present.
func (m *Message) Has(k string) bool {
	_, ok := m.Get(k)
	return ok
}

// Set sets key k to v, replacing an existing value in place or appending.
// It returns m so calls can be chained.
func (m *Message) Set(k, v string) *Message {
	for i := range m.Fields {
		if m.Fields[i].Key == k {
			m.Fields[i].Value = v
			return m
		}
	}
	m.Fields = append(m.Fields, Field{Key: k, Value: v})
	return m
}

// Del removes key k if present, keeping the order of the others.
func (m *Message) Del(k string) {
	for i := range m.Fields {
		if m.Fields[i].Key == k {
			m.Fields = append(m.Fields[:i], m.Fields[i+1:]...)
			return
		}
	}
}

// Reset empties m, keeping its capacity.
func (m *Message) Reset() { m.Fields = m.Fields[:0] }

// WithPrefix yields, in order, every field whose key starts with prefix,
// as (key without the prefix, value).
func (m *Message) WithPrefix(prefix string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, f := range m.Fields {
			if strings.HasPrefix(f.Key, prefix) {
				if !yield(f.Key[len(prefix):], f.Value) {
					return
				}
			}
		}
	}
}

// Clone returns a deep copy that owns its memory. One allocation holds
// every key and value, so the copy outlives the buffer m was decoded from.
func (m *Message) Clone() *Message {
	n := 0
	for _, f := range m.Fields {
		n += len(f.Key) + len(f.Value)
	}
	var arena strings.Builder // String() hands over its buffer without a copy
	arena.Grow(n)
	for _, f := range m.Fields {
		arena.WriteString(f.Key)
		arena.WriteString(f.Value)
	}
	all := arena.String()
	c := &Message{Fields: make([]Field, len(m.Fields))}
	off := 0
	for i, f := range m.Fields {
		c.Fields[i].Key = all[off : off+len(f.Key)]
		off += len(f.Key)
		c.Fields[i].Value = all[off : off+len(f.Value)]
		off += len(f.Value)
	}
	return c
}

// String renders m as its payload text (type first, values escaped), for
// logs and error messages.
func (m *Message) String() string {
	return string(appendPayload(nil, m))
}
