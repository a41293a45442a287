package snapshot

// The log and the snapshots hold every task's arguments, outputs and the
// shared state as given, which may be secrets: only the main control's
// user may read them. A data dir that already exists keeps its mode, the
// operator's choice.
const (
	dirPerm  = 0o700
	filePerm = 0o600
)
