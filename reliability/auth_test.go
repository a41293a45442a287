package reliability_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/internal/patience"
)

// wrongAuth returns the auth value of attempt i on a connection whose
// welcome carried nonce: every kind of wrong answer, none right.
func wrongAuth(i int, token []byte, nonce, otherNonce string) (string, bool) {
	right := auth.Sign(token, nonce)
	switch i % 10 {
	case 0: // random
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b), true
	case 1: // the right value in upper case
		return strings.ToUpper(right), true
	case 2: // replayed: right for another connection's nonce
		return auth.Sign(token, otherNonce), true
	case 3: // signed with another token
		return auth.Sign(append([]byte("x"), token...), nonce), true
	case 4: // one character short
		return right[:63], true
	case 5: // one character more
		return right + "0", true
	case 6: // empty
		return "", true
	case 7: // missing
		return "", false
	case 8: // the token itself
		return string(token), true
	default: // the nonce with a trailing LF signed
		return auth.Sign(token, nonce+"\n"), true
	}
}

// TestAuth_WrongAttempts hammers a main control that requires the shared
// token with wrong hello and register handshakes from several
// connections at once (random, upper-case, replayed, wrong token, cut,
// padded, empty, missing, the token in clear). None may be accepted:
// every answer must be error code=auth_failed, then a close. Meanwhile an
// honest client with the right token keeps working, and must be answered
// within probeLimit (90th percentile; the 99th and the slowest are
// reported).
func TestAuth_WrongAttempts(t *testing.T) {
	if testing.Short() {
		t.Skip("floods take a while")
	}
	sc := currentScale()
	fig := figures.add(10, "wrong auth attempts (hmac-sha256)", "attempts")
	dir := t.TempDir()
	token := []byte("reliability-" + rand.Text())
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, append(token, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	mc := startMain(t, filepath.Join(dir, "data"), "--token-file", tokenFile)
	pid := mc.Cmd.Process.Pid
	l := newLedger()
	l.token = token
	bg := startBackground(mc.Addr, l, "auth")

	before := honestLatencies(t, mc.Addr, token, 300, nil)
	var accepted, wrongAnswer, notClosed atomic.Int64
	var during []time.Duration
	figureRSS(t, fig, pid, func() {
		stop := make(chan struct{})
		var hw sync.WaitGroup
		hw.Add(1)
		go func() { defer hw.Done(); during = honestLatencies(t, mc.Addr, token, 0, stop) }()
		var other atomic.Value
		other.Store(strings.Repeat("0", 32))
		parallel(sc.authAttempts, 8, func(i int) {
			p, err := dialPeer(mc.Addr)
			if err != nil {
				wrongAnswer.Add(1)
				return
			}
			defer p.close()
			val, present := wrongAuth(i, token, p.nonce, other.Load().(string))
			other.Store(p.nonce)
			kv := []string{"req", "a"}
			typ := "hello"
			if i%2 == 1 {
				typ, kv = "register", []string{"executor_id", fmt.Sprintf("intruder-%d", i), "task_types", "t"}
			}
			if present {
				kv = append(kv, "auth", val)
			}
			_ = p.send(typ, kv...)
			got, err := p.waitClosed(5 * time.Second)
			switch {
			case err != nil:
				notClosed.Add(1)
			case len(got) == 0:
				wrongAnswer.Add(1)
			case got[0].Type() == "hello_ok" || got[0].Type() == "registered":
				accepted.Add(1)
			case got[0].Type() != "error" || got[0].Value("code") != "auth_failed" || len(got) != 1:
				wrongAnswer.Add(1)
			}
		})
		close(stop)
		hw.Wait()
	})
	fig.injected = sc.authAttempts
	if n := accepted.Load(); n > 0 {
		t.Errorf("%d wrong auth attempts were ACCEPTED", n)
	}
	if n := wrongAnswer.Load(); n > 0 {
		t.Errorf("%d wrong auth attempts were not answered with exactly error code=auth_failed", n)
	}
	if n := notClosed.Load(); n > 0 {
		t.Errorf("%d wrong auth attempts were not closed within 5 s", n)
	}
	p50b, p99b, maxb := percentiles(before)
	p50, p99, maxd := percentiles(during)
	// p90, not the maximum: a shared host stalls now and then, and the
	// promise after the fault is checked by the probe below.
	// The limit stretches with the load: a busy host is slow for every
	// client, and this checks what the attack adds.
	if p90, limit := percentile(during, 90), patience.Scale(probeLimit); p90 > limit {
		t.Errorf("honest client during the attack: p90 %v over %v", p90, limit)
	}
	fig.probed(probe(t, mc.Addr, token, true))
	bg.stop(t, mc.Addr, fig)
	fig.note("none accepted, each answered auth_failed and closed. Honest client (stats, submit, query), before: p50 %s, p99 %s, max %s over %d requests; during the attack: p50 %s, p99 %s, max %s over %d requests",
		ms(p50b), ms(p99b), ms(maxb), len(before), ms(p50), ms(p99), ms(maxd), len(during))
}

// honestLatencies times requests of a client with the right token: n of
// them, or until stop is closed.
func honestLatencies(t testing.TB, addr string, token []byte, n int, stop <-chan struct{}) []time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{Token: token, Logger: quiet})
	if err != nil {
		t.Errorf("honest client: %v", err)
		return nil
	}
	defer c.Close()
	var out []time.Duration
	for i := 0; n == 0 || i < n; i++ {
		if stop != nil {
			select {
			case <-stop:
				return out
			default:
			}
		}
		start := time.Now()
		var err error
		switch i % 3 {
		case 0:
			_, err = c.Stats(ctx)
		case 1:
			var s client.Submitted
			s, err = c.Submit(ctx, client.SubmitRequest{Type: "honest"})
			if err == nil {
				_, err = c.Query(ctx, s.ID)
			}
		case 2:
			_, _, err = c.StateGet(ctx)
		}
		if err != nil {
			t.Errorf("honest client: %v", err)
			return out
		}
		out = append(out, time.Since(start))
		time.Sleep(5 * time.Millisecond)
	}
	return out
}

// percentile returns the p-th percentile of d.
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)*p/100]
}

func percentiles(d []time.Duration) (p50, p99, maxd time.Duration) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)*99/100], s[len(s)-1]
}
