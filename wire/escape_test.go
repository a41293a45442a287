package wire

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// EscapedLen and appendEscaped take a word-at-a-time shortcut for plain
// values; both must agree with the escaping rule for every value, short
// and long, with the special byte anywhere, and with non-ASCII text.
func TestEscaping(t *testing.T) {
	rule := strings.NewReplacer(`\`, `\\`, "\n", `\n`, "=", `\e`)
	values := []string{"", "a", "hello", "exactly8", "nine bytes", strings.Repeat("x", 100), "héllo", "日本語のテキスト", "\xff"}
	for _, special := range []string{`\`, "\n", "="} {
		for n := 1; n <= 20; n++ {
			for at := 0; at < n; at++ {
				b := []byte(strings.Repeat("v", n))
				b[at] = special[0]
				values = append(values, string(b))
			}
		}
	}
	for _, v := range values {
		want := rule.Replace(v)
		require.Equal(t, want, string(appendEscaped([]byte("k="), v))[2:], "%q", v)
		require.Equal(t, len(want), EscapedLen(v), "%q", v)
		require.Equal(t, want != v, needsEscape(v), "%q", v)
	}
}

func TestCutEscaped(t *testing.T) {
	tests := []struct {
		v    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"hello", 0, ""},
		{"hello", -1, ""},
		{"a=b", 2, "a"}, // the `=` takes two bytes
		{"a=b", 3, "a="},
		{"a=b", 4, "a=b"}, // a\eb
		{"a\nb", 2, "a"},
		{"\\\\", 3, "\\"},
		{"héllo", 2, "h"}, // é is two bytes: no half rune
		{"héllo", 3, "hé"},
		{"日本", 5, "日"},
		{"", 4, ""},
	}
	for _, tc := range tests {
		got := CutEscaped(tc.v, tc.n)
		require.Equal(t, tc.want, got, "CutEscaped(%q, %d)", tc.v, tc.n)
		require.LessOrEqual(t, EscapedLen(got), max(tc.n, 0))
	}
}

func TestUnescape_ReversesAppendEscaped(t *testing.T) {
	for _, v := range []string{"", "plain", "a=b", "line\nbreak", `back\slash`, "\\=\n\\\\"} {
		if got := Unescape(string(AppendEscaped(nil, v))); got != v {
			t.Errorf("Unescape(AppendEscaped(%q)) = %q", v, got)
		}
	}
	if got := Unescape(`lone\`); got != `lone\` {
		t.Errorf("a lone backslash: got %q", got)
	}
	if got := Unescape(`odd\x`); got != `odd\x` {
		t.Errorf("an unknown escape: got %q", got)
	}
}
