// Package wire is the apollo11 protocol codec (wire-v1, sections 1 and 2).
//
// A frame is a 4-byte big-endian payload length followed by a UTF-8 payload
// of LF-separated key=value lines. The package has three layers.
//
//   - Message is an ordered list of key/value fields with typed accessors.
//     Accessor failures are *ValueError, which the server answers with
//     bad_request. A *MalformedError is different. It means the framing can
//     no longer be trusted, and the connection must close.
//   - Decoder and AppendFrame/Builder are the allocation-free slice codec of
//     the event-loop server. Decoded messages borrow from the caller's
//     buffer. Copy anything kept past the buffer's life, with Message.Clone
//     or strings.Clone.
//   - Reader and Writer are the streaming codec for executors and clients,
//     with the same limits.
//
// The codec enforces every limit of the spec. It checks the maximum payload
// from the 4-byte header alone, before any payload is buffered.
package wire
