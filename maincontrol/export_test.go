package maincontrol

// HTTPMaxConns lets the external tests fill the metrics port exactly.
const HTTPMaxConns = httpMaxConns

// LoadedRaft lets the external tests run their clusters with the
// internal tests' Raft timeouts.
var LoadedRaft = loadedRaft
