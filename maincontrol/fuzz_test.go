package maincontrol_test

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
	"github.com/apollo11/apollo11/wire"
)

// fuzzMaxFrame is small so that frame_too_large is within a fuzzer's reach.
const fuzzMaxFrame = 4096

// frames encodes messages given as a type and key, value pairs.
func frames(msgs ...[]string) []byte {
	var out []byte
	for _, m := range msgs {
		b := wire.Begin(out, wire.Kind(m[0]))
		for i := 1; i+1 < len(m); i += 2 {
			b.Str(m[i], m[i+1])
		}
		var err error
		if out, err = b.Finish(); err != nil {
			panic(err)
		}
	}
	return out
}

// FuzzServer_Stream sends any bytes, cut into two writes at any point, to
// a real main control over loopback, as a client or executor that knows
// nothing of the protocol might. Whatever it sends, every frame the main
// control answers decodes strictly within its max_frame; an error whose
// code ends the connection is followed by the close; and afterwards a new
// client is still served: the server neither panics, nor hangs, nor
// stops. The core's rules have their own target (FuzzCore_Messages in
// maincontrol/core); this one covers the server's framing, buffering and
// close paths. One server serves every input of a fuzzing process, so
// tasks and shared state build up between inputs: a failure found while
// fuzzing may need the inputs before it, and may not reproduce from its
// corpus file alone.
func FuzzServer_Stream(f *testing.F) {
	hello := frames([]string{"hello", "req", "h"})
	f.Add(hello, uint16(0))
	f.Add(frames([]string{"hello", "req", "h"}, []string{"submit", "req", "s", "task_type", "t", "arg.a", "1", "wait", "true"},
		[]string{"query", "req", "q", "task_id", "1"}, []string{"stats", "req", "st"}, []string{"list", "req", "l", "state", "pending"}), uint16(7))
	f.Add(frames([]string{"register", "executor_id", "fz", "task_types", "t", "slots", "2"}, []string{"heartbeat", "seq", "1", "running", "1.1"},
		[]string{"started", "task_id", "1", "version", "1"}, []string{"result", "task_id", "1", "version", "1", "status", "succeeded", "state.add.n", "1"},
		[]string{"state_get", "keys", "n"}, []string{"bye"}), uint16(40))
	f.Add([]byte{0, 0, 0, 0}, uint16(2))                                                              // length 0: malformed
	f.Add([]byte{0, 0, 0x10, 1, 'x'}, uint16(1))                                                      // over max_frame
	f.Add(append(hello[:len(hello):len(hello)], 0, 0, 0, 9, 't', 'y', 'p', 'e', '=', 'x'), uint16(9)) // a frame cut short
	f.Add([]byte("\x00\x00\x00\x0btype=hello\n\x00\x00\x00\x07type=\xff"), uint16(3))                 // trailing LF, then bad UTF-8

	addr, _ := maincontroltest.Start(f, maincontrol.Config{Core: core.Config{MaxFrame: fuzzMaxFrame}, MaxConns: 64})
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("cannot connect: %v", err)
		}
		defer c.Close()
		at := min(int(cut), len(in))
		go func() { // the reads below must run while a large input is written
			if _, err := c.Write(in[:at]); err == nil {
				_, _ = c.Write(in[at:])
			}
		}()
		checkAnswers(t, c)
		if !served(addr) {
			t.Fatalf("after %q the main control serves no new client", in)
		}
	})
}

// checkAnswers reads what the server answers until it closes or falls
// silent, checking every frame: none over max_frame, none malformed, and a
// close after an error whose code ends the connection.
func checkAnswers(t *testing.T, c net.Conn) {
	dec := wire.Decoder{MaxFrame: fuzzMaxFrame}
	var buf []byte
	chunk := make([]byte, 8192)
	closing := ""
	for {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
		n, err := c.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for len(buf) >= wire.HeaderLen {
			m, used, derr := dec.Decode(buf)
			if derr != nil {
				t.Fatalf("the main control sent a bad frame (%v): % x", derr, buf[:min(len(buf), 64)])
			}
			if m == nil {
				break
			}
			if m.Type() == "error" && wire.Code(m.Value("code")).CloseAfter() {
				closing = m.Value("code")
			}
			buf = buf[used:]
		}
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			if closing != "" {
				// The close follows the error at once; give a loaded
				// machine a moment before calling it missing.
				_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
				if n, err := c.Read(chunk); n > 0 || !errors.Is(err, io.EOF) && !isReset(err) {
					t.Fatalf("error code=%s not followed by a close (read %d bytes, %v)", closing, n, err)
				}
			}
			return
		case errors.Is(err, io.EOF) || isReset(err):
			if len(buf) != 0 {
				t.Fatalf("the connection closed inside a frame: % x", buf[:min(len(buf), 64)])
			}
			return
		default:
			t.Fatalf("read: %v", err)
		}
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// served reports whether a new client gets its welcome and a hello_ok.
func served(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := wire.NewReader(c, fuzzMaxFrame)
	if m, err := r.Next(); err != nil || m.Type() != "welcome" {
		return false
	}
	if _, err := c.Write(frames([]string{"hello", "req", "alive"})); err != nil {
		return false
	}
	m, err := r.Next()
	return err == nil && m.Type() == "hello_ok" && m.Value("req") == "alive"
}
