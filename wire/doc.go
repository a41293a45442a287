// Package wire is the apollo11 protocol codec (wire-v1, sections 1 and 2).
//
// A frame is a 4-byte big-endian payload length followed by a UTF-8 payload
// of LF-separated key=value lines. The package has three layers:
//
//   - Message: an ordered list of key/value fields with typed accessors.
//     Accessor failures are *ValueError (the server answers bad_request);
//     they are distinct from *MalformedError, which means the framing can no
//     longer be trusted and the connection must close.
//   - Decoder and AppendFrame/Builder: the allocation-free slice codec used
//     by the event-loop server. Decoded messages borrow from the caller's
//     buffer, so anything kept past the buffer's lifetime must be copied
//     (Message.Clone, strings.Clone).
//   - Reader and Writer: the streaming codec for executors and clients,
//     with the same limits.
//
// Every limit of the spec is enforced inside the codec: the maximum payload
// is checked from the 4-byte header alone, before any payload is buffered.
package wire
