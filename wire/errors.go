package wire

import (
	"errors"
	"fmt"
)

// DefaultMaxFrame is the default maximum payload size (spec section 1).
const DefaultMaxFrame = 1 << 20

// Limits of spec section 2.
const (
	MaxKeys   = 1024 // keys in one payload
	MaxKeyLen = 64   // bytes in one key
	MaxReqLen = 64   // bytes in a req value after unescaping (spec section 3)
)

// MaxExecutorTypes bounds the different task types one executor may
// register with an apollo11 main control (docs/protocol.md, appendix). At
// each change of an executor's load, the main control moves it in the queue
// of every type it serves. With 100,000 types, each dispatch to it cost
// milliseconds. Real executors serve a few dozen.
const MaxExecutorTypes = 1024

// ErrFrameTooLarge is matched (errors.Is) by *FrameTooLargeError.
var ErrFrameTooLarge = errors.New("frame too large")

// ErrMalformed is matched (errors.Is) by *MalformedError.
var ErrMalformed = errors.New("malformed payload")

// FrameTooLargeError reports a header that announces more than the limit.
// It is detected from the 4-byte header alone.
type FrameTooLargeError struct {
	Size uint32 // announced payload length
	Max  int    // the limit in force
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("frame too large: %d bytes announced, max %d", e.Size, e.Max)
}

// Is makes errors.Is(err, ErrFrameTooLarge) true.
func (e *FrameTooLargeError) Is(target error) bool { return target == ErrFrameTooLarge }

// MalformedError reports a payload that breaks spec section 2. Offset is
// where the problem was found, in bytes from the payload's start. The
// 4-byte header is not counted.
type MalformedError struct {
	Reason string
	Offset int
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("malformed payload at byte %d: %s", e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrMalformed) true.
func (e *MalformedError) Is(target error) bool { return target == ErrMalformed }

func malformed(reason string, off int) error { return &MalformedError{Reason: reason, Offset: off} }

// ValueError reports a well-formed payload whose value breaks its message's
// rules. The server answers it with code=bad_request and keeps the
// connection. Its text names the key.
type ValueError struct {
	Key    string
	Reason string
}

func (e *ValueError) Error() string { return e.Key + ": " + e.Reason }

// ErrKey reports a key that an encoder refused.
var ErrKey = errors.New("invalid key")

// ErrValue reports a value that an encoder refused (invalid UTF-8).
var ErrValue = errors.New("invalid value")
