//go:build !unix

package maincontrol

// openFileLimit is unknown here: --max-conns is taken as given.
func openFileLimit() uint64 { return 0 }
