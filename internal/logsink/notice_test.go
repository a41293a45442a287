package logsink_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/logsink"
)

// The notice is a WARN record of the log's own format, written even when
// the log's level would hide a WARN.
func TestSlogNotice(t *testing.T) {
	errorsOnly := &slog.HandlerOptions{Level: slog.LevelError}
	for _, tc := range []struct {
		name   string
		notice func(uint64) []byte
		check  func(t *testing.T, line string)
	}{
		{"default: text", logsink.TextNotice, func(t *testing.T, line string) {
			assert.Contains(t, line, `level=WARN msg="log records dropped: sink too slow" dropped=42`)
		}},
		{"text at level error", logsink.SlogNotice(func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, errorsOnly) }),
			func(t *testing.T, line string) {
				assert.Contains(t, line, `level=WARN msg="log records dropped: sink too slow" dropped=42`)
			}},
		{"json", logsink.SlogNotice(func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, errorsOnly) }),
			func(t *testing.T, line string) {
				var rec map[string]any
				require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
				assert.Equal(t, "WARN", rec["level"])
				assert.Equal(t, logsink.NoticeMsg, rec["msg"])
				assert.EqualValues(t, 42, rec["dropped"])
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := string(tc.notice(42))
			require.True(t, strings.HasSuffix(line, "\n"), "one whole line: %q", line)
			assert.Equal(t, 1, strings.Count(line, "\n"), "one whole line: %q", line)
			tc.check(t, line)
		})
	}
}
