// workers.go: the beanstalkd and gearman worker loops and gearman's binary framing.

package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/apollo11/apollo11/bench"
)

// beanstalkWorker reserves with slots reserves in flight and deletes each
// job as it arrives.
func beanstalkWorker(conn net.Conn, c config, cnt *counters, disp *bench.Histogram) {
	w := bufio.NewWriterSize(conn, 64<<10)
	r := bufio.NewReaderSize(conn, 64<<10)
	for range c.slots {
		w.WriteString("reserve\r\n")
	}
	if w.Flush() != nil {
		return
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "RESERVED" {
			size, _ := strconv.Atoi(f[2])
			body := make([]byte, size+2)
			if _, err := io.ReadFull(r, body); err != nil {
				return
			}
			now := time.Now().UnixNano()
			disp.Record(now - sentAt(body))
			cnt.dispatched.Add(1)
			cnt.last.Store(now)
			fmt.Fprintf(w, "delete %s\r\nreserve\r\n", f[1])
		}
		if r.Buffered() == 0 && w.Flush() != nil {
			return
		}
	}
}

// gearmanWorker grabs with slots grabs in flight and completes each job at
// once, echoing its data.
func gearmanWorker(conn net.Conn, c config, cnt *counters, disp *bench.Histogram) {
	w := bufio.NewWriterSize(conn, 64<<10)
	r := bufio.NewReaderSize(conn, 64<<10)
	writeGearman(w, "REQ", 1, []byte("bench")) // CAN_DO
	grab := func(k int) {
		for range k {
			writeGearman(w, "REQ", 9) // GRAB_JOB
		}
	}
	grab(c.slots)
	outstanding := c.slots
	if w.Flush() != nil {
		return
	}
	for {
		typ, args, err := readGearman(r)
		if err != nil {
			return
		}
		switch typ {
		case 11: // JOB_ASSIGN: handle, function, data
			now := time.Now().UnixNano()
			if len(args) == 3 {
				disp.Record(now - sentAt(args[2]))
				writeGearman(w, "REQ", 13, args[0], args[2]) // WORK_COMPLETE
			}
			cnt.dispatched.Add(1)
			if c.background { // the run ends at dispatch, as for beanstalkd
				cnt.last.Store(now)
			}
			grab(1)
		case 10: // NO_JOB
			outstanding--
			if outstanding == 0 {
				writeGearman(w, "REQ", 4) // PRE_SLEEP
			}
		case 6: // NOOP: work is waiting
			if outstanding == 0 {
				grab(c.slots)
				outstanding = c.slots
			}
		}
		if r.Buffered() == 0 && w.Flush() != nil {
			return
		}
	}
}

// gearmanSubmit is the packet type that submits a job: SUBMIT_JOB, or
// SUBMIT_JOB_BG for a background job.
func gearmanSubmit(background bool) uint32 {
	if background {
		return 18
	}
	return 7
}

// writeGearman writes one binary packet: magic, type, size, NUL-joined args.
func writeGearman(w *bufio.Writer, magic string, typ uint32, args ...[]byte) {
	size := 0
	for i, a := range args {
		size += len(a)
		if i > 0 {
			size++
		}
	}
	var hdr [12]byte
	hdr[0] = 0
	copy(hdr[1:4], magic)
	putU32(hdr[4:], typ)
	putU32(hdr[8:], uint32(size))
	w.Write(hdr[:])
	for i, a := range args {
		if i > 0 {
			w.WriteByte(0)
		}
		w.Write(a)
	}
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}

// readGearman reads one response packet and splits its arguments.
func readGearman(r *bufio.Reader) (uint32, [][]byte, error) {
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	typ := uint32(hdr[4])<<24 | uint32(hdr[5])<<16 | uint32(hdr[6])<<8 | uint32(hdr[7])
	size := uint32(hdr[8])<<24 | uint32(hdr[9])<<16 | uint32(hdr[10])<<8 | uint32(hdr[11])
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	if size == 0 {
		return typ, nil, nil
	}
	var args [][]byte
	switch typ {
	case 11: // handle, function, data (data may hold NULs)
		args = splitN(body, 3)
	case 13: // handle, data
		args = splitN(body, 2)
	default:
		args = [][]byte{body}
	}
	return typ, args, nil
}

func splitN(b []byte, n int) [][]byte {
	var out [][]byte
	for len(out) < n-1 {
		i := strings.IndexByte(string(b), 0)
		if i < 0 {
			break
		}
		out = append(out, b[:i])
		b = b[i+1:]
	}
	return append(out, b)
}
