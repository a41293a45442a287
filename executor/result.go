package executor

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apollo11/apollo11/wire"
)

// MaxErrorText is the longest `error` text an executor sends. A longer
// handler error is cut on a rune boundary and ends in "...".
const MaxErrorText = 4096

// Error texts of results the executor makes up itself.
const (
	errTextTooLarge = "result too large"
	errTextPanic    = "panic: "
)

// outcome is a finished dispatch's result, kept until its result_ack.
type outcome struct {
	tok       token
	seq       uint64 // completion order, for re-sending in order
	ok        bool   // succeeded
	retryable bool   // for a failure
	errText   string
	out       map[string]string
	set       map[string]string
	add       map[string]int64

	frame    []byte // cached encoding
	frameMax int    // the max_frame the cache was checked against
	size     int    // what it counts in Executor.unackedBytes
}

// newOutcome turns a handler's return values into a result.
func newOutcome(tok token, res Result, err error) *outcome {
	o := &outcome{tok: tok, ok: err == nil, out: res.Out}
	if err != nil {
		o.retryable = !IsPermanent(err)
		o.errText = errorText(err)
		return o
	}
	o.set, o.add = res.Set, res.Add
	return o
}

// fail turns o into a permanent failure without outputs.
func (o *outcome) fail(text string) {
	o.ok, o.retryable, o.errText = false, false, text
	o.out, o.set, o.add = nil, nil, nil
	o.frame = nil
}

// summary is what the logs show of an outcome, copied so that it can be
// read without Executor.mu.
type summary struct {
	ok, retryable bool
	errText       string
}

func (o *outcome) summary() summary { return summary{o.ok, o.retryable, o.errText} }

func (s summary) status() string {
	if s.ok {
		return "succeeded"
	}
	return "failed"
}

// status is the wire status word.
func (o *outcome) status() string {
	if o.ok {
		return "succeeded"
	}
	return "failed"
}

// encode returns o's `result` frame, checked against maxFrame. A result the
// codec refuses, for a bad key or value, or one too large for maxFrame, is
// first turned into a permanent failure without outputs. replaced says why.
func (o *outcome) encode(maxFrame int) (frame []byte, replaced string) {
	if o.frame != nil && o.frameMax == maxFrame {
		return o.frame, ""
	}
	frame, err := o.build()
	switch {
	case err != nil:
		replaced = "invalid result: " + err.Error()
		o.fail(clipText(replaced))
		frame, _ = o.build()
	case len(frame)-wire.HeaderLen > maxFrame:
		replaced = fmt.Sprintf("result of %d bytes exceeds max_frame %d", len(frame)-wire.HeaderLen, maxFrame)
		o.fail(errTextTooLarge)
		frame, _ = o.build()
	}
	o.frame, o.frameMax = frame, maxFrame
	return frame, replaced
}

func (o *outcome) build() ([]byte, error) {
	b := wire.Begin(make([]byte, 0, o.sizeHint()), wire.KindResult)
	b.Uint("task_id", o.tok.id)
	b.Uint("version", o.tok.version)
	b.Str("status", o.status())
	if !o.ok {
		if !o.retryable {
			b.Bool("retryable", false)
		}
		if o.errText != "" {
			b.Str("error", o.errText)
		}
	}
	for _, k := range sortedKeys(o.out) {
		b.PrefixStr(wire.PrefixOut, k, o.out[k])
	}
	if o.ok {
		for _, k := range sortedKeys(o.set) {
			b.PrefixStr(wire.PrefixStateSet, k, o.set[k])
		}
		for _, k := range sortedKeys(o.add) {
			b.PrefixStr(wire.PrefixStateAdd, k, strconv.FormatInt(o.add[k], 10))
		}
	}
	return b.Finish()
}

// sizeHint estimates the encoded frame's size, so that it is built in one
// allocation.
func (o *outcome) sizeHint() int {
	n := 96 + len(o.errText)
	for k, v := range o.out {
		n += len(k) + len(v) + 6
	}
	for k, v := range o.set {
		n += len(k) + len(v) + 12
	}
	n += len(o.add) * (64 + 21)
	return n
}

// errorText renders a handler error for the wire, as valid UTF-8 of at
// most MaxErrorText bytes. An empty text is sent as no `error` key.
func errorText(err error) string {
	return clipText(strings.ToValidUTF8(err.Error(), "\uFFFD"))
}

func clipText(s string) string {
	if len(s) <= MaxErrorText {
		return s
	}
	cut := MaxErrorText - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// clipValue cuts v on a rune boundary so that its escaped form takes at
// most room bytes. A cut value ends in "...". Nothing is left when room
// does not hold even that.
func clipValue(v string, room int) string {
	if wire.EscapedLen(v) <= room {
		return v
	}
	if room < len("...") {
		return ""
	}
	return wire.CutEscaped(v, room-len("...")) + "..."
}

func sortedKeys[V any](m map[string]V) []string {
	switch len(m) {
	case 0:
		return nil
	case 1:
		for k := range m {
			return []string{k}
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
