package core

import (
	"strings"
	"testing"

	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/assert"
)

// encodePrefixed must copy exactly the prefixed lines, in order, escaped,
// whatever other keys sit before, between and after them; the tally's
// range and escape flag only make it faster.
func TestEncodePrefixed(t *testing.T) {
	tests := []struct {
		name string
		kv   []string
		want string
	}{
		{"none", []string{"req", "r", "task_type", "x"}, ""},
		{"one, last", []string{"req", "r", "arg.a", "1"}, "arg.a=1"},
		{"one, first", []string{"arg.a", "1", "req", "r"}, "arg.a=1"},
		{"others between", []string{"arg.a", "1", "req", "r", "arg.b", "2", "args", "x", "arg.c", "3", "key", "k"},
			"arg.a=1\narg.b=2\narg.c=3"},
		{"look-alikes are not copied", []string{"arga", "1", "arg.x", "2", "ar", "3", "out.y", "4"}, "arg.x=2"},
		{"escaping in one value", []string{"arg.a", "plain", "req", "r", "arg.b", "a=b\nc\\d"},
			"arg.a=plain\narg.b=a\\eb\\nc\\\\d"},
		{"empty value", []string{"arg.a", "", "arg.b", "x"}, "arg.a=\narg.b=x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := msg("submit", tc.kv...)
			var l lines
			for i := range m.Fields {
				if strings.HasPrefix(m.Fields[i].Key, wire.PrefixArg) {
					l.add(i, &m.Fields[i])
				}
			}
			got, n := encodePrefixed(m, wire.PrefixArg, l)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, strings.Count(tc.want, "arg."), int(n))
			if tc.want != "" {
				assert.Equal(t, len(tc.want)+1, l.size, "size counts each line and one LF")
			}
		})
	}
}
