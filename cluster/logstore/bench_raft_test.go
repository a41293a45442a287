package logstore

import (
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// nopFSM applies nothing: the benchmark measures raft on its stores.
type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return sumSnap{}, nil }
func (nopFSM) Restore(r io.ReadCloser) error       { return r.Close() }

// logAndStable is a store raft takes as both its log and stable store.
type logAndStable interface {
	raft.LogStore
	raft.StableStore
	Close() error
}

// BenchmarkRaftApply runs three raft members on one kind of store, over
// raft's in-memory transport, and applies 256-byte commands from 32
// goroutines at once, as a leader's group commit would. Each member
// fsyncs what it stores, so the store sets the pace.
func BenchmarkRaftApply(b *testing.B) {
	opens := []struct {
		name string
		open func(b *testing.B, dir string) logAndStable
	}{
		{"own", func(b *testing.B, dir string) logAndStable {
			s, err := Open(dir, Options{})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"boltdb", func(b *testing.B, dir string) logAndStable {
			s, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	}
	for _, o := range opens {
		b.Run(o.name, func(b *testing.B) {
			var rafts []*raft.Raft
			var stores []logAndStable
			var trans []*raft.InmemTransport
			var cfg raft.Configuration
			for i := range 3 {
				id := raft.ServerID(fmt.Sprintf("n%d", i))
				addr, t := raft.NewInmemTransport(raft.ServerAddress(id))
				trans = append(trans, t)
				cfg.Servers = append(cfg.Servers, raft.Server{ID: id, Address: addr, Suffrage: raft.Voter})
			}
			for _, a := range trans {
				for _, c := range trans {
					if a != c {
						a.Connect(c.LocalAddr(), c)
					}
				}
			}
			for i, t := range trans {
				s := o.open(b, b.TempDir())
				stores = append(stores, s)
				c := raftConfig(cfg.Servers[i].ID)
				c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = time.Second, time.Second, time.Second
				c.Logger = hclog.NewNullLogger()
				r, err := raft.NewRaft(c, nopFSM{}, s, s, raft.NewInmemSnapshotStore(), t)
				if err != nil {
					b.Fatal(err)
				}
				rafts = append(rafts, r)
			}
			defer func() {
				for i, r := range rafts {
					r.Shutdown().Error()
					stores[i].Close()
				}
			}()
			if err := rafts[0].BootstrapCluster(cfg).Error(); err != nil {
				b.Fatal(err)
			}
			var leader *raft.Raft
			for leader == nil {
				for _, r := range rafts {
					if r.State() == raft.Leader {
						leader = r
					}
				}
				time.Sleep(time.Millisecond)
			}
			cmd := make([]byte, 256)
			const workers = 32
			work := make(chan struct{}, workers)
			var wg sync.WaitGroup
			var failed error
			var mu sync.Mutex
			b.SetBytes(int64(len(cmd)))
			b.ResetTimer()
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range work {
						if err := leader.Apply(cmd, 10*time.Second).Error(); err != nil {
							mu.Lock()
							failed = err
							mu.Unlock()
						}
					}
				}()
			}
			for range b.N {
				work <- struct{}{}
			}
			close(work)
			wg.Wait()
			b.StopTimer()
			if failed != nil {
				b.Fatal(failed)
			}
		})
	}
}
