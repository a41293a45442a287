// Package bench is apollo11's whole-system benchmark harness, behind `apollo11-bench`.
// It starts a main control, or aims at one.
// It drives it with raw-wire producers and executors, or with the scenario's own peers.
// It reports throughput and latency.
// It also reports what the load cost the main control, the harness and the machine.
// Each scenario has a Run function taking its Config and returning its Report.
// The scenarios are the load itself, wire, idle, pending, failover, flood and stalls.
// A Report writes itself as text and JSON.
//
// The harness speaks the wire protocol directly (package wire), not through the client package.
// So its own cost stays far below the main control's, and its numbers measure the server.
// README.md beside this file explains every scenario and how to read its report.
// It also holds the numbers measured.
package bench
