// Package core is the main control's state machine. It holds every task,
// executor and shared-state rule of wire-v1 sections 3 to 7. It uses no
// sockets, disks or goroutines.
//
// The server feeds it inputs. A peer connected (Open), a decoded message
// arrived (Handle), a peer is gone (Closed), or the clock moved on (Tick).
// The core answers through Effects with frames for peers, change records
// for the log, and closes. Time comes from an injected Clock, randomness
// from an injected source. So every rule can be tested with a fake clock
// and no network.
//
// Every change that must survive a crash is a record. Live decisions build
// a record, hand it to Effects.Record, then apply it. Recovery applies the
// same records, from a snapshot and the log, to an empty core. It reaches
// the identical state. Frames handed to Effects.Send may reach the peer only
// once every record recorded before them is durable. That one rule gives
// "confirm after durable" for submitted, cancelled, result_ack and done. It
// also gives "dispatch is durable before its task frame". The handshake
// frames, which show no change, are the exception (see Wait).
//
// Tasks live in a chunked table that is copy-on-write between snapshots.
// Freeze is O(chunks). A snapshot is serialized from the frozen chunks
// on another goroutine while the core goes on.
//
// A Core is not safe for concurrent use, so the server gives it one owner.
//
// # Words
//
// Record kinds and flags use a few short verbs.
//
//	back       a dispatch is undone: the task is pending again, no attempt used
//	taken back its dispatch is no longer current (flagTakenBack)
//	arm        a retrying task's backoff starts, once the retry cap lets it
//	ready      a retrying, waiting or delayed task joins its queue
//	drop       retention forgets ended tasks
//	dirty      a task type whose queue or free executors changed
//	urgent     a dirty type, ordered by its most urgent pending task
//
// # Files
//
// Inputs and rules:
//
//	core.go        Core, New, the inputs (Open, Handle, Closed, Tick)
//	session.go     handshakes, and refusing what a peer may not send
//	routes.go      the handler table of each peer role
//	admin.go       the admin token's proof and the optional features
//	submit.go      submit: parsing, keys, dependencies
//	dispatch.go    matching pending tasks with free executor slots
//	execmsg.go     executor messages: heartbeat, start, cancel acks
//	result.go      results from executors
//	ends.go        task endings, cancels, retry or fail
//	pendingq.go    how tasks enter and leave the pending queues
//	retry.go       the retry backoff
//	tick.go        timers firing: delays, timeouts, lost executors
//	dones.go       done replies, paced over ticks
//	reads.go       read requests: query, list, stats, state_get, debug
//	sharedstate.go the key/value shared state and its cap
//	kept.go        disconnected executors kept until their timeout
//	taskbytes.go   the bytes tasks hold, against the caps
//	epoch.go       restart epochs in dispatch versions
//	policy.go      per-type policies: submit defaults, retry shape, limits
//	stuck.go       running tasks past their type's limit, and p99 windows
//	policyview.go  read-only views of the policies, for metrics
//	statefix.go    state_set and state_del: shared-state repair, with CAS
//	pause.go       pause and resume of a task type
//	typelist.go    type_list: the known task types, a page at a time
//	exectypes.go   an executor's types message, and the ops records' checks
//	durations.go   kept progress, queued and run times
//	history.go     the latest transitions of all tasks, for the dashboard
//	opsdesk.go     what the operator's requests share, and their counts
//	schedule.go    cron schedules: parsing, fire times, jitter, firing from the tick
//	schedmsg.go    the schedule requests: add, list, pause, resume, delete
//	runs*.go       runs (protocol 8.10): the run object and its state
//	               (runs), run_submit (runspec, runsubmit), output
//	               references (runrefs), compensation and cancel (runops),
//	               resume, reads, run_done waits, records (runrec, runapply)
//
// Records, snapshots and recovery:
//
//	records.go     the record codec
//	reccodec.go    the varint and string primitives records are written with
//	v1fields.go    the v1 task fields' table: submit rule, TaskInfo, inspector
//	taskfields.go  the task field table: a row per field added after v1
//	apply.go       commit and replay: check, then mutate
//	snapshot.go    Freeze, snapshot entries, loading and Recovered
//	snapdelta.go   incremental snapshots: what changed since the last
//	loadbatch.go   LoadBatch: a restart's entries, decoded off the core's goroutine
//	framecheck.go  CheckFrames, run once after recovery
//	view.go        read-only views for the inspector and metrics
//	browse.go      Browse: a bounded page of tasks, for the dashboard
//
// Types and outputs:
//
//	task.go, state.go, executors.go  a task, its states, an executor
//	effects.go, frames.go            Effects, and building frames for it
//	config.go, clock.go, observer.go, keys.go, budget.go, loglimit.go, trace.go
//
// Data structures (idx_*.go), each tested on its own:
//
//	idx_table.go        the chunked copy-on-write task table
//	idx_assignments.go  an executor's tasks, open addressing by id
//	idx_depids.go       varint-packed dependency lists
//	idx_depmarks.go     a bitset that deduplicates a long depends_on
//	idx_dependents.go   the waiting tasks that depend on each task
//	idx_queue.go        ring-buffer FIFO queues of task ids
//	idx_timers.go       the timer heap
//	idx_urgency.go      the heap of types by their most urgent task
//	idx_lines.go        arg. and out. lines, tallied in one scan
//	idx_waiters.go      who waits for which task's done
//	idx_gates.go        which records each task frame waits for
package core
