// Package bench is apollo11's whole-system benchmark harness, behind
// `apollo11-bench`: it starts a main control (or aims at one), drives it
// with raw-wire producers and executors or with the scenario's own peers,
// and reports throughput, latency and what the load cost the main control,
// the harness and the machine. Each scenario (the load itself, wire, idle,
// pending, failover, flood, stalls) has a Run function taking its Config
// and returning its Report, which writes itself as text and JSON.
//
// The harness speaks the wire protocol directly (package wire), not
// through the client package, so that its own cost stays far below the
// main control's and its numbers measure the server. README.md
// beside this file explains every scenario, how to read its report and
// the numbers measured.
package bench
