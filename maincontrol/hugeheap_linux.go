package maincontrol

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on the platforms shipped.
const hugePage = 2 << 20

// minHugeHeap is the smallest restart worth a collection for its huge pages.
const minHugeHeap = 64 << 20

// hugeHeap asks the kernel for transparent huge pages under the next n
// bytes of heap. A restart fills hundreds of MB with its state. On a VM
// each 4 KiB page fault costs microseconds, half of a large restart's CPU.
// Go maps its heap without that advice, and many hosts give huge pages
// only where advised. So one allocation maps n bytes without touching
// them; they are advised, then given back, and the state fills them.
// Untouched, the range costs address space, not memory.
func hugeHeap(n int64) {
	if n < minHugeHeap || !thpAdvised() || strings.Contains(os.Getenv("GODEBUG"), "disablethp=1") {
		return
	}
	// A 32-bit heap has no room to map hundreds of MB ahead.
	if unsafe.Sizeof(uintptr(0)) < 8 {
		return
	}
	// A failed mapping would end the process: stay well inside what the
	// host and the process's limits allow.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err != nil || lim.Cur != unix.RLIM_INFINITY {
		return
	}
	if b, err := os.ReadFile("/proc/sys/vm/overcommit_memory"); err != nil || string(bytes.TrimSpace(b)) == "2" {
		return
	}
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return
	}
	n = min(n, int64(uint64(si.Totalram)*uint64(si.Unit)/2))
	if n < minHugeHeap {
		return
	}
	// Only pages given back to the kernel are known to be zero. A range
	// starting on a used page would be cleared, faulting in every page.
	debug.FreeOSMemory()
	b := make([]byte, n)
	p := uintptr(unsafe.Pointer(&b[0]))
	beg := (p+hugePage-1)&^(hugePage-1) - p
	end := (p+uintptr(n))&^(hugePage-1) - p
	if beg < end {
		_ = syscall.Madvise(b[beg:end], syscall.MADV_HUGEPAGE) // advice only: 4 KiB pages still work
	}
	runtime.KeepAlive(b)
	// Given back, its pages are known zero: the state's allocations skip
	// clearing them. A collection alone would leave them to clear.
	debug.FreeOSMemory()
}

// thpAdvised says whether the kernel gives huge pages only where advised.
// With "always" the heap has them already, and "never" ignores advice.
func thpAdvised() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && bytes.Contains(b, []byte("[madvise]"))
}
