// Package builtin holds the handlers built into the apollo11 executor
// daemon: echo, sleep, fail and exec. Each constructor returns an
// executor.Handler; register it under the task type of your choice
// (the daemon uses the names below).
//
//   - Echo: every arg.<k> comes back as out.<k>; it always succeeds.
//   - Sleep: sleeps arg.ms milliseconds, or until the task is cancelled.
//   - Fail: fails with error=arg.error (default "fail handler"), retryable
//     unless arg.retryable=false.
//   - Exec: runs one program, without a shell, when the daemon allows it.
//
// # Exec
//
// The command line travels in the task's arguments in one of two forms:
//
//   - arg.argv.0, arg.argv.1, ... : one argument per key, exactly as given
//     (spaces, quotes and empty strings included). The keys must run from
//     argv.0 without gaps. This form wins when arg.argv.0 is present.
//   - arg.argv : the whole command line, split on ASCII white space
//     (space, tab, LF, VT, FF, CR; a no-break or other Unicode space stays
//     in its argument); no quoting of any kind.
//
// Optional arg.stdin is written to the program's standard input (otherwise
// it reads /dev/null).
//
// argv[0] must be an absolute path that appears exactly (byte for byte) in
// ExecConfig.Allow, and ExecConfig.Enabled must be true; anything else is
// a permanent failure, as is a start that can never succeed: an argument
// that holds a NUL byte (checked before starting) or arguments too long
// for the system (E2BIG). An allow-listed program that is missing or
// cannot be executed (ENOENT, EACCES) is a retryable failure: the operator
// listed it, and it may be being deployed; the task is retried, with
// backoff, until its attempts run out. The program runs in its own process group, with a
// scrubbed environment (PATH=/usr/local/bin:/usr/bin:/bin, LANG=C.UTF-8 and
// ExecConfig.Env), in the executor's working directory. The whole group is
// killed with SIGKILL when the task is cancelled or times out, and again
// once the program exits, so that what it started in the background dies
// with it.
//
// On Linux, in a binary that calls GuardMain (the apollo11 daemon does),
// containment is full. Each program runs under a guard, this binary
// re-executed: a child subreaper, so that every descendant whose parent
// dies is handed to it, even one that left the group (setsid, setpgid).
// The guard gets SIGTERM when the executor dies, even by kill -9 or the
// OOM killer (its parent-death signal), and the program gets SIGKILL when
// the guard dies. When the program ends, the task is cancelled or the
// executor dies, the guard kills the program's group and every descendant
// handed to it, so that a task dispatched again elsewhere never runs twice
// at once. The parent-death signal follows the thread that started the
// process, not the process (prctl(2)), so that thread is held (see
// lockThread) until the wait. The executor, a child subreaper too
// (BecomeSubreaper), kills at the end of each task whatever a guard killed
// outright left to it. Elsewhere, or without GuardMain, the program starts
// directly; on Linux it still gets SIGKILL when the executor dies, but its
// own children do not. A systemd unit's cgroup holds everything either way:
// systemd/apollo11-executor@.service's KillMode=mixed sends SIGTERM to the
// executor alone, so that running programs get the drain, and SIGKILL to
// what is left once the executor has exited.
//
// Trust: Exec runs what the main control sends, and the executor trusts
// whoever answers at its address. Wire v1's auth is one-way: the token
// proves the executor to the main control, never the main control to the
// executor, so any program that binds the address (while the main control
// is down for an upgrade, say) can send exec tasks; the executor only
// warns, at each registration, when it holds a token that the main
// control does not ask for. ExecConfig.Allow limits the program, not its
// arguments: a shell, env, find, xargs or an interpreter on the list runs
// anything, as the executor's user. List only programs whose every
// argument is safe, and keep the main control's address out of other
// users' reach.
//
// Outputs: out.stdout and out.stderr (invalid UTF-8 replaced by U+FFFD),
// out.exit_code, and out.signal when a signal ended the program. Each
// stream is cut after ExecConfig.MaxOutput bytes, and both are cut further,
// on rune boundaries, so that the result fits the main control's
// max_frame (executor.Task.MaxFrame) as its size check counts it (escaping
// included: `=`, `\` and LF take two bytes); when both are too long each
// gets half the room. A stream cut either way comes with
// out.stdout_truncated=true / out.stderr_truncated=true. So a program that
// ran always reports its status and exit code, never a "result too
// large". A non-zero exit is a retryable failure with error="exit status
// N", outputs kept.
package builtin
