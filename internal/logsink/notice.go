package logsink

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"time"
)

// NoticeMsg is the message of the notice of dropped records.
const NoticeMsg = "log records dropped: sink too slow"

// TextNotice is the default notice, a record of slog's text handler.
//
//	time=... level=WARN msg="log records dropped: sink too slow" dropped=N
var TextNotice = SlogNotice(func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) })

// SlogNotice returns a notice that is a WARN record made by the handler
// newHandler returns. It makes a new one for each notice, writing to w.
// That is the daemon's own handler, so in a JSON log the notice is JSON
// too. No one line reads as both text and JSON. The notice is written
// whatever the handler's level. It is not a log call but the account of
// lost ones.
func SlogNotice(newHandler func(w io.Writer) slog.Handler) func(dropped uint64) []byte {
	return func(dropped uint64) []byte {
		r := slog.NewRecord(time.Now(), slog.LevelWarn, NoticeMsg, 0)
		r.AddAttrs(slog.Uint64("dropped", dropped))
		var b bytes.Buffer
		if err := newHandler(&b).Handle(context.Background(), r); err != nil || b.Len() == 0 {
			b.Reset()
			_ = slog.NewTextHandler(&b, nil).Handle(context.Background(), r)
		}
		return b.Bytes()
	}
}
