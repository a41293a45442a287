package reliability_test

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// witnessTimeout bounds one witness request: past it the request failed.
const witnessTimeout = 5 * time.Second

// healthzTimeout bounds a /healthz probe, as an orchestrator's probe
// timeout does (Kubernetes' default): past it the probe failed.
const healthzTimeout = time.Second

// witnessKind says what the witness asks during an attack.
type witnessKind struct {
	fresh   bool   // a new connection per request (dial, hello, stats), as a peer arriving
	healthz string // else, with a URL: GET /healthz over a new HTTP connection, as a probe
	// else: stats and a submit in turn on one connection, as a client at work
}

// witness is an honest peer making one request at a time during an
// attack, and timing each round trip.
type witness struct {
	addr    string
	token   []byte
	confirm func(key string, id uint64, duplicate bool) // a submit the witness saw confirmed
	kind    witnessKind
	p       *peer // the session's connection, nil until dialled
	http    *http.Client
	mu      sync.Mutex
	lat     []time.Duration
	failed  int
	inRow   int // failures in a row, now
	rowMax  int // and at most
	err     error
	done    chan struct{}
	wg      sync.WaitGroup
}

func newWitness(addr string, token []byte, confirm func(string, uint64, bool), kind witnessKind) *witness {
	w := &witness{addr: addr, token: token, confirm: confirm, kind: kind, done: make(chan struct{}),
		http: &http.Client{Timeout: healthzTimeout, Transport: &http.Transport{DisableKeepAlives: true}}}
	w.wg.Add(1)
	go w.run()
	return w
}

func (w *witness) run() {
	defer w.wg.Done()
	defer func() {
		if w.p != nil {
			w.p.close()
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-w.done:
			return
		default:
		}
		start := time.Now()
		err := w.request(i)
		d := time.Since(start)
		w.mu.Lock()
		w.lat = append(w.lat, d)
		w.inRow++
		if err == nil {
			w.inRow = 0
		} else {
			w.failed++
			w.err = err
		}
		w.rowMax = max(w.rowMax, w.inRow)
		w.mu.Unlock()
		if err != nil {
			time.Sleep(50 * time.Millisecond) // a refused peer does not retry in a hot loop
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop ends the witness and returns its round trips, how many failed,
// the most that failed in a row and the last error.
func (w *witness) stop() ([]time.Duration, int, int, error) {
	close(w.done)
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lat, w.failed, w.rowMax, w.err
}

func (w *witness) request(i int) error {
	switch {
	case w.kind.healthz != "":
		resp, err := w.http.Get(w.kind.healthz)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/healthz: %s", resp.Status)
		}
		return nil
	case w.kind.fresh:
		p, err := dialClient(w.addr, w.token)
		if err != nil {
			return err
		}
		defer p.close()
		_, err = w.ask(p, "stats", "req", "w")
		return err
	}
	if w.p == nil {
		p, err := dialClient(w.addr, w.token)
		if err != nil {
			return err
		}
		w.p = p
	}
	req := "w" + strconv.Itoa(i)
	var err error
	if i%2 == 0 {
		_, err = w.ask(w.p, "stats", "req", req)
	} else {
		key := "witness-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		var m *wire.Message
		if m, err = w.ask(w.p, "submit", "req", req, "task_type", "work", "key", key); err == nil {
			id, _ := wire.ParseUint(m.Value("task_id"))
			w.confirm(key, id, m.Value("duplicate") == "true")
		}
	}
	if err != nil {
		w.p.close()
		w.p = nil
	}
	return err
}

// ask sends one request and waits for its reply; an error reply fails.
func (w *witness) ask(p *peer, typ string, kv ...string) (*wire.Message, error) {
	if err := p.send(typ, kv...); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(witnessTimeout)
	for {
		m, err := p.recv(max(time.Until(deadline), time.Millisecond))
		if err != nil {
			return nil, err
		}
		if m.Value("req") != kv[1] {
			continue
		}
		if m.Type() == "error" {
			return nil, errors.New(m.String())
		}
		return m, nil
	}
}
