package wire

import (
	"errors"
	"net"
	"time"
)

// RefusalWait bounds how long a peer that is closing waits for its
// Refusal to be written. The peer it refuses may not be reading.
const RefusalWait = time.Second

// Refusal returns the `type=error` frame with which any peer answers a
// decode error before it closes the connection (spec sections 1 and 2).
// A header over the limit gets code=frame_too_large. Any other framing or
// payload error gets code=malformed. The message is the error's text. It
// returns false for an error that is not the codec's, such as a failed
// read, which gets no answer.
func Refusal(err error) ([]byte, bool) {
	var code Code
	switch {
	case errors.Is(err, ErrFrameTooLarge):
		code = CodeFrameTooLarge
	case errors.Is(err, ErrMalformed):
		code = CodeMalformed
	default:
		return nil, false
	}
	frame := ErrorFrame(code, err.Error())
	return frame, frame != nil
}

// ErrorFrame returns the frame `type=error code=<code> message=<message>`
// with no req. It answers what is not a request, such as a decode error,
// or a connection refused or cut off. It returns nil only for a message
// that cannot be encoded.
func ErrorFrame(code Code, message string) []byte {
	b := Begin(nil, KindError)
	b.Str("code", string(code))
	b.Str("message", message)
	frame, err := b.Finish()
	if err != nil {
		return nil
	}
	return frame
}

// RefuseHandshake answers err, from reading a frame of the handshake, on
// conn, as Refusal does later. The caller then closes conn. A peer whose
// first bytes are a text banner (ForeignBanner) speaks another protocol
// and is not answered. RefusalWait bounds the write.
func RefuseHandshake(conn net.Conn, err error) {
	if ForeignBanner(err) {
		return
	}
	if frame, ok := Refusal(err); ok {
		_ = conn.SetWriteDeadline(time.Now().Add(RefusalWait))
		_, _ = conn.Write(frame)
	}
}
