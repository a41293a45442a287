// Package reliability is apollo11's fault-injection suite. It has no API:
// everything is in its tests, which start the real binaries (built once by
// internal/testbin) on loopback ports and inject faults into them, each
// in a bounded run:
//
//   - kill -9 of the main control under load, many rounds;
//   - kill -9 of executors, and SIGSTOP longer than the heartbeat timeout
//     then SIGCONT (their tasks move on; their late results are refused as
//     stale);
//   - connection resets in the middle of frames, slowloris peers (half
//     frames, handshakes never finished), 10,000 connections opened and
//     dropped;
//   - random and mutated frames seeded from the fuzz corpus
//     (fuzz/testdata/fuzz), oversize headers, repeated wrong auth;
//   - a full disk during log writes (an in-process main control on an
//     injected snapshot.FS);
//   - leader kill -9 and network partitions of a 3-member cluster, in
//     network namespaces the tests make and remove, with the clients'
//     history checked linearizable (porcupine) (the cluster_* files);
//   - attacks by hostile peers (wait floods, amplifying heartbeats,
//     registration churn, HTTP and unauthenticated crowding) on the
//     binary run as its systemd unit runs it (TestAttack_*).
//
// After every fault it checks that no confirmed submit is lost, that no
// task has more than one accepted result, that every task ends (or can
// still be dispatched), that a well-behaved client is answered within
// 100 ms, and, after floods, that the main control's memory returns near
// its baseline. At the end it prints a table of figures.
//
// # Running it
//
//	go test ./reliability/                 # short mode: a few minutes at most (part of CI)
//	go test ./reliability/ -v -run . -count=1   # the same, printing the figures table
//	go test ./reliability/ -soak -v -timeout 60m # soak: 200 kill rounds, 1,000,000 frames, ...
//	go test ./reliability/ -v -figures /tmp/figures.md # also write the table as Markdown
//
// Under -race the counts are smaller (the harness is instrumented; the child
// binaries are not); with -short only the two quick tests run (late results
// of a frozen executor, disk full). docs/reliability.md publishes the latest
// figures with the command that produced them, and how each is measured.
package reliability
