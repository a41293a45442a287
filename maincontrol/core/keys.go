package core

import "github.com/apollo11/apollo11/wire"

// Keys the core writes in its frames, validated once at start-up.
var (
	kReq           = wire.MustKey("req")
	kCode          = wire.MustKey("code")
	kMessage       = wire.MustKey("message")
	kProto         = wire.MustKey("proto")
	kServer        = wire.MustKey("server")
	kNonce         = wire.MustKey("nonce")
	kAuth          = wire.MustKey("auth")
	kMaxFrame      = wire.MustKey("max_frame")
	kFeatures      = wire.MustKey("features")
	kAdmin         = wire.MustKey("admin")
	kRequeues      = wire.MustKey("requeues")
	kRequeueReason = wire.MustKey("requeue_reason")
	kSkipped       = wire.MustKey("skipped")
	kDryRun        = wire.MustKey("dry_run")
	kExecutorID    = wire.MustKey("executor_id")
	kHeartbeatMs   = wire.MustKey("heartbeat_ms")
	kTimeoutMs     = wire.MustKey("timeout_ms")
	kStateVersion  = wire.MustKey("state_version")
	kSeq           = wire.MustKey("seq")
	kTaskID        = wire.MustKey("task_id")
	kVersion       = wire.MustKey("version")
	kTaskType      = wire.MustKey("task_type")
	kAttempt       = wire.MustKey("attempt")
	kMaxAttempts   = wire.MustKey("max_attempts")
	kTraceID       = wire.MustKey("trace_id")
	kAccepted      = wire.MustKey("accepted")
	kReason        = wire.MustKey("reason")
	kDuplicate     = wire.MustKey("duplicate")
	kState         = wire.MustKey("state")
	kError         = wire.MustKey("error")
	kCreatedMs     = wire.MustKey("created_ms")
	kUpdatedMs     = wire.MustKey("updated_ms")
	kCount         = wire.MustKey("count")
	kIDs           = wire.MustKey("ids")
	kNext          = wire.MustKey("next")
	kExecutors     = wire.MustKey("executors")
	kUptimeMs      = wire.MustKey("uptime_ms")
)

// kTasksState holds the stats keys tasks.<state>, indexed by State.
var kTasksState = func() (k [NumStates + 1]wire.Key) {
	for _, s := range AllStates {
		k[s] = wire.MustKey("tasks." + s.String())
	}
	return k
}()
