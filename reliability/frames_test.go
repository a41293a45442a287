package reliability_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// fuzzCounts tallies a mutated-frame flood.
type fuzzCounts struct {
	frames, conns, closing, hanging atomic.Int64
	mu                              sync.Mutex
	replies                         map[string]int // reply type, or error code
	problems                        []string
}

func (c *fuzzCounts) reply(m *wire.Message) {
	k := strings.Clone(m.Type()) // m borrows from the read buffer
	if k == "error" {
		k = "error " + m.Value("code")
	}
	c.mu.Lock()
	c.replies[k]++
	c.mu.Unlock()
}

func (c *fuzzCounts) problem(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.problems) < 20 {
		c.problems = append(c.problems, fmt.Sprintf(format, args...))
	}
}

func (c *fuzzCounts) summary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.replies))
	for k := range c.replies {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return c.replies[keys[i]] > c.replies[keys[j]] })
	var parts []string
	for i, k := range keys {
		if i == 8 {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s", thousands(c.replies[k]), k))
	}
	return strings.Join(parts, ", ")
}

// TestFrames_MutatedFlood sends random and mutated frames, seeded from
// the fuzz corpus, over several connections at once: as clients, as
// executors and before any handshake. Mutants the decoder finds well
// formed are streamed (the connection must stay open); each one that is
// malformed or too large ends its connection, and must be answered by
// error code=malformed or frame_too_large and a close; a mutant that ends
// in a partial frame is followed by our FIN, and the main control must
// close. Afterwards it must answer a well-behaved client within
// probeLimit, hold no connection of the flood, and be back near its
// baseline memory.
func TestFrames_MutatedFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("floods take a while")
	}
	sc := currentScale()
	fig := figures.add(8, "random and mutated frames (fuzz corpus seeds)", "frames")
	seeds := loadCorpus(t)
	mc := startMain(t, t.TempDir(), "--max-pending", "5000")
	pid := mc.Cmd.Process.Pid
	bg := startBackground(mc.Addr, newLedger(), "fuzz")
	counts := &fuzzCounts{replies: map[string]int{}}
	var during probeStats
	const workers = 16
	start := time.Now()
	figureRSS(t, fig, pid, func() {
		stopProbes := during.run(mc.Addr, nil)
		defer stopProbes()
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				quota := sc.frames / workers
				if w < sc.frames%workers {
					quota++
				}
				fuzzWorker(mc.Addr, w, quota, seeds, counts)
			}()
		}
		wg.Wait()
	})
	took := time.Since(start)
	fig.injected = int(counts.frames.Load())
	for _, p := range counts.problems {
		t.Error(p)
	}
	bg.settle(t, mc.Addr, fig)
	fig.note("%s frames from %d seeds in %s (%.0f/s) over %s connections (%s ended by a malformed or oversize frame, %s by a partial one); replies: %s. Probes during the flood: %s",
		thousands(fig.injected), len(seeds), took.Round(time.Millisecond), float64(fig.injected)/took.Seconds(),
		thousands(int(counts.conns.Load())), thousands(int(counts.closing.Load())), thousands(int(counts.hanging.Load())),
		counts.summary(), during.String())
}

// fuzzWorker sends quota mutants, connection after connection.
func fuzzWorker(addr string, w, quota int, seeds [][]byte, c *fuzzCounts) {
	rng := rand.New(rand.NewPCG(uint64(w), 42))
	dec := wire.NewDecoder(0)
	sent := 0
	for conn := 0; sent < quota; conn++ {
		kind := conn % 10 // 0-5 client, 6-8 executor, 9 no handshake
		n, err := fuzzConn(addr, kind, fmt.Sprintf("fz-%d-%d", w, conn), quota-sent, rng, dec, seeds, c)
		sent += n
		c.frames.Add(int64(n))
		c.conns.Add(1)
		if err != nil {
			c.problem("worker %d connection %d (kind %d): %v", w, conn, kind, err)
			if strings.Contains(err.Error(), "cannot connect") {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
}

// fuzzConn runs one connection of the flood and returns the mutants it
// sent. It keeps at most 1 in 30 mutants that end the connection, so that
// connections carry many frames.
func fuzzConn(addr string, kind int, id string, quota int, rng *rand.Rand, dec *wire.Decoder, seeds [][]byte, c *fuzzCounts) (int, error) {
	p, err := dialPeer(addr)
	if err != nil {
		return 0, fmt.Errorf("cannot connect: %w", err)
	}
	defer p.close()
	switch {
	case kind < 6:
		_, err = p.handshake("hello", nil, "req", "fz")
	case kind < 9:
		_, err = p.handshake("register", nil, "executor_id", id, "task_types", "image.resize,work,echo,t", "slots", "4")
	}
	if err != nil {
		return 0, fmt.Errorf("handshake: %w", err)
	}
	executor := kind >= 6 && kind < 9
	var last atomic.Pointer[wire.Message]
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			m, err := p.r.Next()
			if err != nil {
				return
			}
			c.reply(m)
			if m.Type() == "error" {
				last.Store(m.Clone())
			}
		}
	}()
	var buf []byte
	sent := 0
	var end verdict
	var want wire.Code
	for sent < quota {
		mut := mutate(rng, seeds)
		v, code := judge(dec, mut)
		if v == leaves && !executor {
			v = goesOn // bye from a client: not_permitted, kept open
		}
		if v == forbidden || v != goesOn && kind != 9 && rng.IntN(30) != 0 {
			continue // keep the connection going
		}
		if kind == 9 && v == goesOn {
			v = closes // before the handshake anything but hello/register closes
		}
		buf = append(buf, mut...)
		sent++
		if v != goesOn {
			end, want = v, code
			break
		}
		if len(buf) > 16<<10 {
			if _, err := p.conn.Write(buf); err != nil {
				return sent, fmt.Errorf("write of well-formed frames failed: %w", err)
			}
			buf = buf[:0]
		}
	}
	if _, err := p.conn.Write(buf); err != nil && end == goesOn {
		return sent, fmt.Errorf("write of well-formed frames failed: %w", err)
	}
	switch end {
	case goesOn: // quota reached: leave politely
		p.close()
		<-readerDone
		return sent, nil
	case hangs:
		c.hanging.Add(1)
		_ = p.conn.(*net.TCPConn).CloseWrite()
	default:
		c.closing.Add(1)
	}
	select {
	case <-readerDone:
	case <-time.After(10 * time.Second):
		p.close()
		<-readerDone
		return sent, errors.New("not closed 10 s after a frame that ends the connection")
	}
	if end == closes && kind != 9 {
		m := last.Load()
		if m == nil || m.Value("code") != string(want) {
			return sent, fmt.Errorf("closed after a bad frame with %v, want error code=%s", m, want)
		}
	}
	return sent, nil
}

// TestFrames_Oversize sends frames larger than the limits: headers that
// announce more than max_frame (before and after the handshake, with the
// announced payload pushed behind them), more than 1,024 keys, a key of
// 65 bytes, an over-long req, and the largest legal frame. An oversize
// header must be answered with frame_too_large and a close without the
// payload being buffered (the RSS stays flat); the others get their
// error, and the largest legal frame its answer.
func TestFrames_Oversize(t *testing.T) {
	if testing.Short() {
		t.Skip("floods take a while")
	}
	sc := currentScale()
	fig := figures.add(9, "oversize headers and frames", "frames")
	mc := startMain(t, t.TempDir())
	pid := mc.Cmd.Process.Pid
	bg := startBackground(mc.Addr, newLedger(), "oversize")
	var mu sync.Mutex
	var errs []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(errs) < 10 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}
	sizes := []uint32{1<<20 + 1, 16 << 20, 1 << 30, 1<<32 - 1}
	n := max(sc.resets/5, 40)
	var during probeStats
	figureRSS(t, fig, pid, func() {
		stopProbes := during.run(mc.Addr, nil)
		defer stopProbes()
		parallel(n, 32, func(i int) {
			size := sizes[i%len(sizes)]
			if err := oversizeHeader(mc.Addr, i%3, size); err != nil {
				fail("header of %d bytes, phase %d: %v", size, i%3, err)
			}
		})
		for _, tc := range oversizeFrames() {
			if err := tc.run(mc.Addr); err != nil {
				fail("%s: %v", tc.name, err)
			}
		}
	})
	fig.injected = n + len(oversizeFrames())
	for _, e := range errs {
		t.Error(e)
	}
	bg.settle(t, mc.Addr, fig)
	fig.note("%d headers announcing 1 MiB + 1 to 4 GiB, each followed by up to 1 MiB of payload, before and after the handshake; and %d oversize or largest-legal frames. Probes during: %s",
		n, len(oversizeFrames()), during.String())
}

// oversizeHeader announces size bytes in phase 0 (before the handshake),
// 1 (as a client) or 2 (as an executor) and pushes payload after it.
func oversizeHeader(addr string, phase int, size uint32) error {
	p, err := dialPeer(addr)
	if err != nil {
		return err
	}
	defer p.close()
	switch phase {
	case 1:
		_, err = p.handshake("hello", nil, "req", "h")
	case 2:
		_, err = p.handshake("register", nil, "executor_id", "big-"+strconv.Itoa(int(size))+"-"+p.nonce[:8], "task_types", "t")
	}
	if err != nil {
		return err
	}
	hdr := frame(nil)[:0]
	hdr = append(hdr, byte(size>>24), byte(size>>16), byte(size>>8), byte(size))
	go func() { // push payload until the close stops us
		chunk := make([]byte, 64<<10)
		if _, err := p.conn.Write(hdr); err != nil {
			return
		}
		for i := 0; i < 16; i++ {
			if _, err := p.conn.Write(chunk); err != nil {
				return
			}
		}
	}()
	got, err := p.waitClosed(10 * time.Second)
	if err != nil {
		return errors.New("not closed within 10 s")
	}
	if len(got) != 1 || got[0].Type() != "error" || got[0].Value("code") != "frame_too_large" {
		return fmt.Errorf("got %v, want one error code=frame_too_large", got)
	}
	return nil
}

// oversizeCase is one frame past (or at) a limit and the answer it needs.
type oversizeCase struct {
	name    string
	payload string
	want    string // reply type, or "error <code>"
	closes  bool
}

func oversizeFrames() []oversizeCase {
	var many strings.Builder
	many.WriteString("type=stats\nreq=m")
	for i := 0; i < 1024; i++ {
		fmt.Fprintf(&many, "\nk%d=v", i)
	}
	largest := "type=stats\nreq=big\nzz_pad="
	largest += strings.Repeat("x", 1<<20-len(largest))
	return []oversizeCase{
		{"1,025 keys", many.String(), "error malformed", true},
		{"a key of 65 bytes", "type=stats\n" + strings.Repeat("k", 65) + "=v", "error malformed", true},
		{"a req of 65 bytes", "type=stats\nreq=" + strings.Repeat("r", 65), "error bad_request", false},
		{"the largest legal frame (1 MiB)", largest, "stats", false},
	}
}

func (tc oversizeCase) run(addr string) error {
	p, err := dialClient(addr, nil)
	if err != nil {
		return err
	}
	defer p.close()
	if _, err := p.conn.Write(frame([]byte(tc.payload))); err != nil {
		return err
	}
	m, err := p.recv(10 * time.Second)
	if err != nil {
		return err
	}
	got := m.Type()
	if got == "error" {
		got += " " + m.Value("code")
	}
	if got != tc.want {
		return fmt.Errorf("answered %s, want %s", m, tc.want)
	}
	_, err = p.waitClosed(500 * time.Millisecond)
	if closed := err == nil; closed != tc.closes {
		return fmt.Errorf("closed: %v, want %v", closed, tc.closes)
	}
	return nil
}
