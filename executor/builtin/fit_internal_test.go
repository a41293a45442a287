package builtin

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/wire"
)

func TestFitStreams(t *testing.T) {
	tests := []struct {
		name           string
		stdout, stderr string
		room           int
		wantOut        string
		wantErr        string
	}{
		{"both fit", "abc", "de", 5, "abc", "de"},
		{"halves", "aaaaaa", "bbbbbb", 6, "aaa", "bbb"},
		{"short stderr leaves its rest", "aaaaaa", "b", 5, "aaaa", "b"},
		{"short stdout leaves its rest", "a", "bbbbbb", 5, "a", "bbbb"},
		{"escaping counts", "a=b=c", "", 5, "a=b", ""}, // a\eb is 4 bytes, a\eb\e 6
		{"no half rune", "ééé", "", 5, "éé", ""},
		{"no room", "abc", "def", 0, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gotOut, gotErr, outCut, errCut := fitStreams(tc.stdout, tc.stderr, tc.room)
			assert.LessOrEqual(t, wire.EscapedLen(gotOut)+wire.EscapedLen(gotErr), tc.room)
			assert.True(t, strings.HasPrefix(tc.stdout, gotOut))
			assert.True(t, strings.HasPrefix(tc.stderr, gotErr))
			assert.Equal(t, tc.wantOut, gotOut)
			assert.Equal(t, tc.wantErr, gotErr)
			assert.Equal(t, gotOut != tc.stdout, outCut)
			assert.Equal(t, gotErr != tc.stderr, errCut)
		})
	}
}
