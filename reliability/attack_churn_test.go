package reliability_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAttack_RegistrationChurn: peers register and disconnect at once,
// each time under a fresh executor id naming 1,024 task types of its own.
// What the main control keeps of executors gone, and what it logs and
// snapshots of them, must stay bounded.
func TestAttack_RegistrationChurn(t *testing.T) {
	const workers, types = 16, 1_024
	r := startAttack(t, 4, "registration churn: fresh executor ids naming 1,024 types each", nil, witnessKind{})
	var registered, refused atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(r.until); n++ {
				id := "churn-" + strconv.Itoa(w) + "-" + strconv.Itoa(n)
				names := make([]string, types)
				for i := range names {
					names[i] = id + "-t" + strconv.Itoa(i)
				}
				p, _, err := dialExecutor(r.addr, id, strings.Join(names, ","), 1, nil)
				if err != nil {
					refused.Add(1)
					time.Sleep(10 * time.Millisecond)
					continue
				}
				registered.Add(1)
				p.close()
			}
		}()
	}
	wg.Wait()
	r.finish(fmt.Sprintf("%s registrations of fresh ids (%s refused or failed)",
		thousands(int(registered.Load())), thousands(int(refused.Load()))))
}
