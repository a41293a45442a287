package wire

import "strings"

// Code is a protocol error code, sent as `type=error code=<Code>`.
type Code string

// Error codes of the spec. The main control answers each exactly as the
// spec says. CloseAfter tells which ones end the connection.
const (
	CodeMalformed         Code = "malformed"
	CodeFrameTooLarge     Code = "frame_too_large"
	CodeBadRequest        Code = "bad_request"
	CodeUnknownType       Code = "unknown_type"
	CodeNotRegistered     Code = "not_registered"
	CodeUnsupportedProto  Code = "unsupported_proto"
	CodeAuthFailed        Code = "auth_failed"
	CodeNotPermitted      Code = "not_permitted"
	CodeDuplicateExecutor Code = "duplicate_executor"
	CodeUnknownTask       Code = "unknown_task"
	CodeIllegalTransition Code = "illegal_transition"
	CodeQueueFull         Code = "queue_full"
	CodeUnavailable       Code = "unavailable"
	// CodeConflict answers a compare-and-set whose state_version is not
	// the current one (protocol section 8.6).
	CodeConflict Code = "conflict"
	// CodeUnknownRun: a run request names no run the main control keeps
	// (protocol section 8.10).
	CodeUnknownRun Code = "unknown_run"
	// CodeNotLeader: a cluster follower refuses the request, which changed
	// nothing. Its `leader` key names the leader's address when known
	// (protocol section 8.13).
	CodeNotLeader Code = "not_leader"
)

// CloseAfter reports whether the main control closes the connection after
// sending an error with this code.
func (c Code) CloseAfter() bool {
	switch c {
	case CodeMalformed, CodeFrameTooLarge, CodeNotRegistered, CodeUnsupportedProto,
		CodeAuthFailed, CodeDuplicateExecutor:
		return true
	}
	return false
}

// Reason is a result_ack refusal reason (spec section 4, result).
type Reason string

// Refusal reasons, in the order the main control checks them.
const (
	ReasonUnknownTask       Reason = "unknown_task"
	ReasonStale             Reason = "stale"
	ReasonCancelled         Reason = "cancelled"
	ReasonIllegalTransition Reason = "illegal_transition"
	ReasonIllegalValue      Reason = "illegal_value"
)

// ErrorReply is an `error` frame from the main control, as an error.
type ErrorReply struct {
	Code    Code
	Message string
}

func (e *ErrorReply) Error() string {
	if e.Message == "" {
		return "main control error " + string(e.Code)
	}
	return "main control error " + string(e.Code) + ": " + e.Message
}

// ErrorReplyOf reads an `error` frame. It copies the strings.
func ErrorReplyOf(m *Message) *ErrorReply {
	return &ErrorReply{Code: Code(strings.Clone(m.Value("code"))), Message: strings.Clone(m.Value("message"))}
}
