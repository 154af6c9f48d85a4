package sqlstore_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// BenchmarkClaimFinish measures a run's store work, a Claim and a Finish,
// on the memory store (the baseline), SQLite and PostgreSQL, with one
// replica and with three: three Stores on their own pools, as three
// processes would have, all claiming every slot, the winner finishing it.
// One op is one slot run; runs/s is the throughput.
func BenchmarkClaimFinish(b *testing.B) {
	type open func(b *testing.B) schedule.Store
	bes := []struct {
		name string
		open func(b *testing.B) open
	}{
		{"Memory", func(b *testing.B) open {
			m := schedule.NewMemoryStore(16)
			return func(*testing.B) schedule.Store { return m }
		}},
	}
	for _, be := range backends() {
		bes = append(bes, struct {
			name string
			open func(b *testing.B) open
		}{be.name, func(b *testing.B) open {
			dsn := be.dsn(b)
			return func(b *testing.B) schedule.Store { return newStore(b, be, dsn) }
		}})
	}
	// max=1 claims with ClaimRun under Concurrency{Max: 1}, as a Job
	// under OverlapSkip does: the claim counts the job's runs in flight
	// on every replica. max=0 is Claim, which counts nothing.
	for _, be := range bes {
		for _, cfg := range []struct{ replicas, max int }{{1, 0}, {1, 1}, {3, 0}, {3, 1}} {
			replicas := cfg.replicas
			b.Run(fmt.Sprintf("%s/replicas=%d/max=%d", be.name, replicas, cfg.max), func(b *testing.B) {
				open := be.open(b)
				stores := make([]schedule.Store, replicas)
				for i := range stores {
					stores[i] = open(b)
				}
				base := time.Now().Truncate(time.Second)
				b.ReportAllocs()
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for i, s := range stores {
					node := fmt.Sprint("n", i)
					wg.Go(func() {
						for k := range b.N {
							r := schedule.Record{Job: "bench", Due: base.Add(time.Duration(k) * time.Millisecond),
								Status: schedule.Running, Start: time.Now(), Node: node, Attempt: 1}
							var err error
							if cfg.max > 0 {
								_, err = s.(schedule.SharedStore).ClaimRun(ctx, r, schedule.Concurrency{Max: cfg.max})
							} else {
								err = s.Claim(ctx, r)
							}
							switch {
							case errors.Is(err, schedule.ErrClaimed), errors.Is(err, schedule.ErrBusy):
								continue
							case err != nil:
								b.Error(err)
								return
							}
							r.Status, r.End = schedule.Succeeded, time.Now()
							// The memory store keeps 16 records per job: one
							// replica may drop another's before its Finish.
							if err := s.Finish(ctx, r); err != nil && !errors.Is(err, schedule.ErrNoRecord) {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
			})
		}
	}
}

// BenchmarkReclaim measures a Reclaim that finds nothing to take over, as
// each replica's job does every Lease().
func BenchmarkReclaim(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			s := newStore(b, be, be.dsn(b), sqlstore.WithHistory(1000, 1000))
			for i := range 100 {
				r := running("j", i, "a")
				r.Status = schedule.Succeeded
				if err := s.Claim(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := s.Reclaim(ctx, "j", "b", schedule.Concurrency{}); !errors.Is(err, schedule.ErrNoRecord) {
					b.Fatal(err)
				}
			}
		})
	}
}
