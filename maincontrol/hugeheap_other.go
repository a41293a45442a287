//go:build !linux

package maincontrol

// hugeHeap does nothing here: transparent huge pages are Linux's.
func hugeHeap(int64) {}
