package reliability_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
)

// opsOwner is one goroutine's share of the operator's changes: a task
// type it pauses and resumes, and a shared-state key it sets. Its
// requests go one at a time, so that after a kill the durable state is
// the last confirmed change or the one in flight.
type opsOwner struct {
	typ, key string
	// paused and value are the last confirmed; maybePaused and maybeValue
	// the change in flight at the kill, when one was.
	paused, maybePaused    bool
	value, maybeValue      string
	inFlight, confirmedAny bool
}

// TestMaincontrol_Kill9KeepsPausesAndStateRepairs kills the main control
// with SIGKILL while clients pause and resume task types and set shared
// state by hand, with a snapshot every few records; after every restart
// each confirmed pause, resume and state_set is there (protocol 8.5, 8.6:
// durable before the reply).
func TestMaincontrol_Kill9KeepsPausesAndStateRepairs(t *testing.T) {
	if testing.Short() {
		t.Skip("kill rounds take a while")
	}
	rounds := max(2, currentScale().killRounds/4)
	dir := t.TempDir()
	flags := []string{"--snapshot-every", "7"}
	rng := rand.New(rand.NewPCG(28, uint64(rounds)))
	owners := make([]*opsOwner, 8)
	for i := range owners {
		owners[i] = &opsOwner{typ: "type " + strconv.Itoa(i) + ",x", key: "repair." + strconv.Itoa(i)}
	}
	confirmed := 0
	for round := 0; ; round++ {
		mc := startMain(t, dir, flags...)
		waitProbe(t, mc.Addr, nil, 30*time.Second)
		checkOps(t, mc.Addr, owners)
		if round == rounds {
			mc.Kill()
			break
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i, o := range owners {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := opsLoad(ctx, mc.Addr, o, round*1000+i)
				mu.Lock()
				confirmed += n
				mu.Unlock()
			}()
		}
		time.Sleep(time.Duration(200+rng.IntN(600)) * time.Millisecond)
		mc.Kill()
		cancel()
		wg.Wait()
	}
	require.NotZero(t, confirmed, "no change was confirmed before a kill")
	t.Logf("%d rounds, %d pauses, resumes and state repairs confirmed", rounds, confirmed)
}

// opsLoad alternates pause, resume and state_set for o until the
// connection dies; it returns how many were confirmed.
func opsLoad(ctx context.Context, addr string, o *opsOwner, seed int) int {
	cl, err := client.Dial(ctx, addr, client.Options{Logger: quiet})
	if err != nil {
		return 0
	}
	defer cl.Close()
	n := 0
	for i := 0; ctx.Err() == nil; i++ {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var err error
		if i%2 == 0 {
			pause := !o.paused
			o.inFlight, o.maybePaused, o.maybeValue = true, pause, o.value
			if pause {
				_, err = cl.Pause(rctx, o.typ)
			} else {
				_, err = cl.Resume(rctx, o.typ)
			}
			if err == nil {
				o.paused = pause
			}
		} else {
			v := strconv.Itoa(seed) + "." + strconv.Itoa(i)
			o.inFlight, o.maybePaused, o.maybeValue = true, o.paused, v
			_, err = cl.StateSet(rctx, o.key, v)
			if err == nil {
				o.value = v
			}
		}
		cancel()
		if err != nil {
			return n // in flight: either outcome may be durable
		}
		o.inFlight, o.confirmedAny = false, true
		n++
	}
	return n
}

// checkOps requires every owner's last confirmed change, or the one in
// flight at the kill, to be the state after the restart, and then takes
// that state as confirmed.
func checkOps(t *testing.T, addr string, owners []*opsOwner) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, addr, client.Options{Logger: quiet})
	require.NoError(t, err)
	defer cl.Close()
	types, err := cl.TypeListAll(func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 10*time.Second) })
	require.NoError(t, err)
	paused := map[string]bool{}
	for _, ti := range types {
		paused[ti.Name] = ti.Paused
	}
	state, _, err := cl.StateGet(ctx)
	require.NoError(t, err)
	for _, o := range owners {
		gotPaused, gotValue := paused[o.typ], state[o.key]
		ok := gotPaused == o.paused && gotValue == o.value
		if o.inFlight {
			ok = ok || (gotPaused == o.maybePaused && gotValue == o.maybeValue)
		}
		assert.True(t, ok, "%s: paused %v value %q after the restart; confirmed paused %v value %q (in flight %v: paused %v value %q)",
			o.typ, gotPaused, gotValue, o.paused, o.value, o.inFlight, o.maybePaused, o.maybeValue)
		o.paused, o.value, o.inFlight = gotPaused, gotValue, false
	}
	if t.Failed() {
		t.FailNow()
	}
}
