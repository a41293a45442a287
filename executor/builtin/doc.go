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
// with it. On Linux the program is also killed (SIGKILL, Pdeathsig) when
// the executor dies, even by kill -9 or the OOM killer. That is not full
// containment: a process that leaves the group (setsid, setpgid) escapes
// the group kill and outlives its task, and when the executor dies only
// the program it started gets the signal, not that program's children.
// For full containment run the executor as a systemd service, whose
// cgroup holds everything its programs start, escaped or not: with
// KillMode=control-group (systemd's default) or mixed, systemd kills every
// process left in it when the service stops or its executor dies.
// systemd/apollo11-executor@.service uses mixed, which sends SIGTERM to
// the executor alone, so that running programs get the drain, and SIGKILL
// to what is left once the executor has exited; control-group sends
// SIGTERM to every program at once.
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
