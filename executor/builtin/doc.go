// Package builtin holds the handlers built into the apollo11 executor
// daemon: echo, sleep, fail and exec. Each constructor returns an
// executor.Handler. Register it under the task type of your choice.
// The daemon uses the names below.
//
//   - Echo: every arg.<k> comes back as out.<k>. It always succeeds.
//   - Sleep: sleeps arg.ms milliseconds, or until the task is cancelled.
//   - Fail: fails with error=arg.error (default "fail handler"). The
//     failure is retryable unless arg.retryable=false.
//   - Exec: runs one program, without a shell, when the daemon allows it.
//
// # Exec
//
// The command line travels in the task's arguments in one of two forms.
//
//   - arg.argv.0, arg.argv.1, ... hold one argument per key, exactly as
//     given. Spaces, quotes and empty strings are kept. The keys must run
//     from argv.0 without gaps. This form wins when arg.argv.0 is present.
//   - arg.argv holds the whole command line, split on ASCII white space.
//     That is space, tab, LF, VT, FF and CR. A no-break or other Unicode
//     space stays in its argument. There is no quoting of any kind.
//
// Optional arg.stdin is written to the program's standard input.
// Otherwise the program reads /dev/null.
//
// argv[0] must be an absolute path that appears exactly (byte for byte) in
// ExecConfig.Allow. ExecConfig.Enabled must be true. Anything else is a
// permanent failure. So is a start that can never succeed. That is an
// argument that holds a NUL byte (checked before starting), or arguments
// too long for the system (E2BIG). An allow-listed program that is missing
// or cannot be executed (ENOENT, EACCES) is a retryable failure. The
// operator listed it, and it may be being deployed. The task is retried,
// with backoff, until its attempts run out.
//
// The program runs in its own process group, in the executor's working
// directory. Its environment is scrubbed to PATH=/usr/local/bin:/usr/bin:/bin,
// LANG=C.UTF-8 and ExecConfig.Env. The whole group is killed with SIGKILL
// when the task is cancelled or times out. It is killed again once the
// program exits, so what it started in the background dies with it.
//
// On Linux, in a binary that calls GuardMain, containment is full. The
// apollo11 daemon calls it. Each program runs under a guard, which is this
// binary re-executed. The guard is a child subreaper. So every descendant
// whose parent dies is handed to it, even one that left the group (setsid,
// setpgid). The guard gets SIGTERM when the executor dies, even by kill -9
// or the OOM killer. That is its parent-death signal. The program gets
// SIGKILL when the guard dies. The guard kills the program's group and
// every descendant handed to it when the program ends, when the task is
// cancelled, or when the executor dies. So a task dispatched again
// elsewhere never runs twice at once. The parent-death signal follows the
// thread that started the process, not the process (prctl(2)). So that
// thread is held until the wait (see lockThread). The executor is a child
// subreaper too (BecomeSubreaper). At the end of each task it kills
// whatever a guard killed outright left to it.
//
// Elsewhere, or without GuardMain, the program starts directly. On Linux
// it still gets SIGKILL when the executor dies, but its own children do
// not. A systemd unit's cgroup holds everything either way. The KillMode=mixed
// of systemd/apollo11-executor@.service sends SIGTERM to the executor
// alone, so running programs get the drain. It sends SIGKILL to what is
// left once the executor has exited.
//
// Trust: Exec runs what the main control sends. The executor trusts
// whoever answers at its address. Wire v1's auth is one-way. The token
// proves the executor to the main control, never the main control to the
// executor. So any program that binds the address can send exec tasks,
// say while the main control is down for an upgrade. The executor only
// warns, at each registration, when it holds a token that the main
// control does not ask for. ExecConfig.Allow limits the program, not its
// arguments. A shell, env, find, xargs or an interpreter on the list runs
// anything, as the executor's user. List only programs whose every
// argument is safe. Keep the main control's address out of other users'
// reach.
//
// Outputs are out.stdout and out.stderr, with invalid UTF-8 replaced by
// U+FFFD. Then come out.exit_code, and out.signal when a signal ended the
// program. Each stream is cut after ExecConfig.MaxOutput bytes. Both are
// cut further, on rune boundaries, so the result fits the main control's
// max_frame (executor.Task.MaxFrame). The cut counts as the main control's
// size check does, escaping included. `=`, `\` and LF take two bytes. When
// both streams are too long, each gets half the room. A stream cut either
// way comes with out.stdout_truncated=true or out.stderr_truncated=true.
// So a program that ran always reports its status and exit code, never a
// "result too large". A non-zero exit is a retryable failure with
// error="exit status N". The outputs are kept.
package builtin
