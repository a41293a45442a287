package wire

import (
	"maps"
	"slices"
)

// Kind is a message type, sent as `type=<Kind>`.
type Kind string

// Message types of the spec. A new type is a constant here and a row in
// kindSenders.
const (
	KindWelcome    Kind = "welcome"
	KindRegister   Kind = "register"
	KindRegistered Kind = "registered"
	KindHello      Kind = "hello"
	KindHelloOK    Kind = "hello_ok"
	KindHeartbeat  Kind = "heartbeat"
	KindPong       Kind = "pong"
	KindTask       Kind = "task"
	KindStarted    Kind = "started"
	KindProgress   Kind = "progress"
	KindResult     Kind = "result"
	KindResultAck  Kind = "result_ack"
	KindStateGet   Kind = "state_get"
	KindState      Kind = "state"
	KindBye        Kind = "bye"
	KindByeAck     Kind = "bye_ack"
	KindCancel     Kind = "cancel"
	KindCancelled  Kind = "cancelled"
	KindSubmit     Kind = "submit"
	KindSubmitted  Kind = "submitted"
	KindDone       Kind = "done"
	KindQuery      Kind = "query"
	KindTaskState  Kind = "task_state"
	KindList       Kind = "list"
	KindTasks      Kind = "tasks"
	KindStats      Kind = "stats"
	KindDebug      Kind = "debug"
	KindDebugOK    Kind = "debug_ok"
	KindError      Kind = "error"

	// Version 1.1, group admin (protocol sections 8.3 and 8.4).
	KindRequeue      Kind = "requeue"
	KindRequeued     Kind = "requeued"
	KindRequeueWhere Kind = "requeue_where"
	KindCancelWhere  Kind = "cancel_where"
	KindPurgeWhere   Kind = "purge_where"
	KindMatched      Kind = "matched"

	// Version 1.1 (protocol sections 8.5 to 8.7).
	KindPause        Kind = "pause"
	KindPaused       Kind = "paused"
	KindResume       Kind = "resume"
	KindResumed      Kind = "resumed"
	KindStateSet     Kind = "state_set"
	KindStateDel     Kind = "state_del"
	KindStateChanged Kind = "state_changed"
	KindTypeList     Kind = "type_list"
	KindTypePage     Kind = "type_page"
	KindTypes        Kind = "types"
	KindTypesOK      Kind = "types_ok"

	// Version 1.1, group schedules (protocol section 8.12).
	KindScheduleAdd     Kind = "schedule_add"
	KindScheduleAdded   Kind = "schedule_added"
	KindScheduleList    Kind = "schedule_list"
	KindSchedules       Kind = "schedules"
	KindSchedulePause   Kind = "schedule_pause"
	KindSchedulePaused  Kind = "schedule_paused"
	KindScheduleResume  Kind = "schedule_resume"
	KindScheduleResumed Kind = "schedule_resumed"
	KindScheduleDelete  Kind = "schedule_delete"
	KindScheduleDeleted Kind = "schedule_deleted"
	// Version 1.1, group runs (protocol section 8.10).
	KindRunSubmit    Kind = "run_submit"
	KindRunSubmitted Kind = "run_submitted"
	KindRunDone      Kind = "run_done"
	KindRunQuery     Kind = "run_query"
	KindRunState     Kind = "run_state"
	KindRunStep      Kind = "run_step"
	KindRunList      Kind = "run_list"
	KindRuns         Kind = "runs"
	KindRunCancel    Kind = "run_cancel"
	KindRunCancelled Kind = "run_cancelled"
	KindRunResume    Kind = "run_resume"
	KindRunResumed   Kind = "run_resumed"
	// Version 1.1, group cluster (protocol section 8.13).
	KindClusterStatus   Kind = "cluster_status"
	KindClusterStatusOK Kind = "cluster_status_ok"
	KindClusterAdd      Kind = "cluster_add"
	KindClusterRemove   Kind = "cluster_remove"
	KindClusterTransfer Kind = "cluster_transfer"
	KindClusterOK       Kind = "cluster_ok"
)

// Role is a set of peer roles, those who may send a message type.
type Role uint8

// Peer roles.
const (
	RoleClient Role = 1 << iota
	RoleExecutor
	RoleMain
)

// kindSenders is the one table of message types, each with the roles that
// may send it. A type missing here is unknown_type everywhere.
var kindSenders = map[Kind]Role{
	KindWelcome:    RoleMain,
	KindRegister:   RoleExecutor,
	KindRegistered: RoleMain,
	KindHello:      RoleClient,
	KindHelloOK:    RoleMain,
	KindHeartbeat:  RoleExecutor,
	KindPong:       RoleMain,
	KindTask:       RoleMain,
	KindStarted:    RoleExecutor,
	KindProgress:   RoleExecutor,
	KindResult:     RoleExecutor,
	KindResultAck:  RoleMain,
	KindStateGet:   RoleClient | RoleExecutor,
	KindState:      RoleMain,
	KindBye:        RoleExecutor,
	KindByeAck:     RoleMain,
	KindCancel:     RoleClient | RoleMain,
	KindCancelled:  RoleMain,
	KindSubmit:     RoleClient,
	KindSubmitted:  RoleMain,
	KindDone:       RoleMain,
	KindQuery:      RoleClient,
	KindTaskState:  RoleMain,
	KindList:       RoleClient,
	KindTasks:      RoleMain,
	KindStats:      RoleClient | RoleMain,
	KindDebug:      RoleClient,
	KindDebugOK:    RoleMain,
	KindError:      RoleClient | RoleExecutor | RoleMain,

	KindRequeue:      RoleClient,
	KindRequeued:     RoleMain,
	KindRequeueWhere: RoleClient,
	KindCancelWhere:  RoleClient,
	KindPurgeWhere:   RoleClient,
	KindMatched:      RoleMain,

	KindPause:        RoleClient,
	KindPaused:       RoleMain,
	KindResume:       RoleClient,
	KindResumed:      RoleMain,
	KindStateSet:     RoleClient,
	KindStateDel:     RoleClient,
	KindStateChanged: RoleMain,
	KindTypeList:     RoleClient,
	KindTypePage:     RoleMain,
	KindTypes:        RoleExecutor,
	KindTypesOK:      RoleMain,

	KindScheduleAdd:     RoleClient,
	KindScheduleAdded:   RoleMain,
	KindScheduleList:    RoleClient,
	KindSchedules:       RoleMain,
	KindSchedulePause:   RoleClient,
	KindSchedulePaused:  RoleMain,
	KindScheduleResume:  RoleClient,
	KindScheduleResumed: RoleMain,
	KindScheduleDelete:  RoleClient,
	KindScheduleDeleted: RoleMain,
	KindRunSubmit:       RoleClient,
	KindRunSubmitted:    RoleMain,
	KindRunDone:         RoleMain,
	KindRunQuery:        RoleClient,
	KindRunState:        RoleMain,
	KindRunStep:         RoleMain,
	KindRunList:         RoleClient,
	KindRuns:            RoleMain,
	KindRunCancel:       RoleClient,
	KindRunCancelled:    RoleMain,
	KindRunResume:       RoleClient,
	KindRunResumed:      RoleMain,

	KindClusterStatus:   RoleClient,
	KindClusterStatusOK: RoleMain,
	KindClusterAdd:      RoleClient,
	KindClusterRemove:   RoleClient,
	KindClusterTransfer: RoleClient,
	KindClusterOK:       RoleMain,
}

// Known reports whether k is a message type of the spec.
func (k Kind) Known() bool { return kindSenders[k] != 0 }

// SentBy reports whether a peer of role r may send k.
func (k Kind) SentBy(r Role) bool { return kindSenders[k]&r != 0 }

// Senders returns the roles that may send k, or zero for an unknown type.
func (k Kind) Senders() Role { return kindSenders[k] }

// Kinds returns every known message type, sorted.
func Kinds() []Kind { return slices.Sorted(maps.Keys(kindSenders)) }

// Kind returns the value of the `type` key as a Kind, or "".
func (m *Message) Kind() Kind { return Kind(m.Type()) }
