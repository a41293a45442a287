package maincontrol

// HTTPMaxConns lets the external tests fill the metrics port exactly.
const HTTPMaxConns = httpMaxConns
