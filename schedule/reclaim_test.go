package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// deadClaim claims the slot t0 for a node that died: its
// lease runs until store.lease after now.
func deadClaim(t *testing.T, store *leaseStore) {
	t.Helper()
	dead := schedule.Record{Job: "j", Due: t0, Status: schedule.Running, Node: "dead", Attempt: 1}
	require.NoError(t, store.Claim(context.Background(), dead))
}

// deadRecord returns the store's record of the dead node's slot.
func deadRecord(t *testing.T, store *leaseStore) schedule.Record {
	t.Helper()
	h, err := store.History(context.Background(), "j", 100)
	require.NoError(t, err)
	for _, r := range h {
		if r.Due.Equal(t0) {
			return r
		}
	}
	t.Fatal("no record of the dead node's slot")
	return schedule.Record{}
}

// A busy job takes over no expired claim: it looks for them again as
// soon as it is free, and runs the one it finds at once. The claim is
// never dropped as Skipped. Under OverlapBufferOne a job whose runs keep
// overlapping its slots is never free: the claim stays expired in the
// store for another replica.
func TestBusyJobLeavesExpiredClaims(t *testing.T) {
	for _, tc := range []struct {
		overlap schedule.Overlap
		want    []string
		status  schedule.Status
	}{
		// 9s: the dead node's lease ends. 10s: the slot's run starts; the
		// look at the slot finds the job busy. 22s: the run ends, the job
		// looks again and takes the claim over.
		{schedule.OverlapSkip, []string{"20s Skipped Scheduled", "10s Succeeded Scheduled 10s-22s",
			"30s Skipped Scheduled", "0s Succeeded Recovered 22s-34s"}, schedule.Succeeded},
		{schedule.OverlapBufferOne, []string{"10s Succeeded Scheduled 10s-22s", "20s Succeeded Scheduled 22s-34s"},
			schedule.Running},
	} {
		t.Run(tc.overlap.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				store := newLeaseStore(9 * time.Second)
				deadClaim(t, store)
				j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(12*time.Second),
					schedule.WithStore(store), schedule.WithNode("n"), schedule.WithOverlap(tc.overlap),
					schedule.WithMisfire(schedule.MisfireSkip), schedule.WithObserver(l.observe))
				start(t, j)
				time.Sleep(39 * time.Second)
				stop(t, j)
				assert.Equal(t, tc.want, l.summary()[:len(tc.want)])
				assert.Equal(t, 1, l.maxRun, "runs overlapped")
				r := deadRecord(t, store)
				assert.Equal(t, tc.status, r.Status)
				if tc.status == schedule.Succeeded {
					assert.Equal(t, "n", r.Node)
					assert.Equal(t, 2, r.Attempt)
				}
				for _, r := range l.recs() {
					if r.Reason == schedule.Recovered {
						assert.Equal(t, schedule.Succeeded, r.Status, "%+v", r)
					}
				}
			})
		})
	}
}

// slowReclaimJob starts the job "j" of node "n", whose runs of 7 s fall
// due every 10 s (MisfireSkip), on a store that holds the claim of a dead
// node, expired at 9 s, and answers the first Reclaim that takes it over
// 4 s late.
func slowReclaimJob(t *testing.T, l *journal) (*schedule.Job, *leaseStore) {
	store := newLeaseStore(9 * time.Second)
	deadClaim(t, store)
	store.slow = 4 * time.Second
	j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(7*time.Second),
		schedule.WithStore(store), schedule.WithNode("n"),
		schedule.WithMisfire(schedule.MisfireSkip), schedule.WithObserver(l.observe))
	start(t, j)
	return j, store
}

// A slot that falls due while a Reclaim is on its way back waits for its
// answer: the claim taken over runs at once, as the job was free when it
// asked, and the slot then meets the overlap policy (Skipped). The claim
// is taken over once: it is never left to expire for want of a free job,
// which would spend one of its slot's attempts.
func TestReclaimRacingASlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j, store := slowReclaimJob(t, &l)
		// 17s: the slot 10s's run ends; the job asks for the claim, whose
		// answer arrives at 21s. The slot 20s waits for it, and is Skipped
		// then: the Recovered run is in flight.
		time.Sleep(38 * time.Second)
		stop(t, j)
		assert.Equal(t, []string{"10s Succeeded Scheduled 10s-17s", "20s Skipped Scheduled",
			"0s Succeeded Recovered 21s-28s", "30s Succeeded Scheduled 30s-37s"}, l.summary())
		assert.Equal(t, 1, l.maxRun, "runs overlapped")
		r := deadRecord(t, store)
		assert.Equal(t, schedule.Succeeded, r.Status)
		assert.Equal(t, 2, r.Attempt)
	})
}

// emptyReclaimStore is a leaseStore whose first Reclaim takes its time and
// finds nothing, as when another replica took the claim over meanwhile.
type emptyReclaimStore struct {
	*leaseStore
	calls atomic.Int32
}

func (s *emptyReclaimStore) Reclaim(ctx context.Context, job, node string, c schedule.Concurrency) (schedule.Record, error) {
	if s.calls.Add(1) == 1 {
		time.Sleep(4 * time.Second)
		return schedule.Record{}, schedule.ErrNoRecord
	}
	return s.leaseStore.Reclaim(ctx, job, node, c)
}

// A slot that waited for a Reclaim that found nothing runs, late by the
// wait, under every overlap policy: the job was free, and a slot is not
// skipped for a claim that was not taken over.
func TestReclaimFindingNothingRunsTheHeldSlot(t *testing.T) {
	for _, o := range []schedule.Overlap{schedule.OverlapSkip, schedule.OverlapBufferOne, schedule.OverlapReplace, schedule.OverlapAllow, schedule.OverlapBufferAll} {
		t.Run(o.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				store := &emptyReclaimStore{leaseStore: newLeaseStore(9 * time.Second)}
				deadClaim(t, store.leaseStore)
				opts := []schedule.Option{schedule.WithStore(store), schedule.WithNode("n"), schedule.WithOverlap(o),
					schedule.WithMisfire(schedule.MisfireSkip), schedule.WithObserver(l.observe)}
				if o == schedule.OverlapAllow {
					opts = append(opts, schedule.WithMaxParallel(1))
				}
				j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(7*time.Second), opts...)
				start(t, j)
				// 17s: the slot 10s's run ends; the job asks for the claim,
				// and hears at 21s that there is none. The slot 20s, which
				// waited, runs then. 28s: the job takes the claim over.
				time.Sleep(29 * time.Second)
				stop(t, j)
				assert.Equal(t, []string{"10s Succeeded Scheduled 10s-17s", "20s Succeeded Scheduled 21s-28s"}, l.summary()[:2])
				assert.Equal(t, 1, l.maxRun, "runs overlapped")
			})
		})
	}
}

// hungReclaimStore is a leaseStore whose Reclaim blocks, deaf to its
// context, until release is closed.
type hungReclaimStore struct {
	*leaseStore
	release chan struct{}
}

func (s *hungReclaimStore) Reclaim(context.Context, string, string, schedule.Concurrency) (schedule.Record, error) {
	<-s.release
	return schedule.Record{}, schedule.ErrNoRecord
}

// The runs held for a Reclaim wait one lease at most, even for one deaf to
// its context that never answers: then they run, and the slots after them
// run on time.
func TestHungReclaimHoldsSlotsOneLeaseAtMost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := &hungReclaimStore{leaseStore: newLeaseStore(9 * time.Second), release: make(chan struct{})}
		deadClaim(t, store.leaseStore)
		j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
			schedule.WithStore(store), schedule.WithNode("n"),
			schedule.WithMisfire(schedule.MisfireSkip), schedule.WithObserver(l.observe))
		start(t, j)
		// 11.25s: a look finds the dead claim expired; the job is free and
		// asks for it. The Reclaim never answers: the slot 20s waits until
		// 20.25s, a lease after the ask.
		time.Sleep(55 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"10s Succeeded Scheduled 10s-11s", "20s Succeeded Scheduled 20.25s-21.25s",
			"30s Succeeded Scheduled 30s-31s", "40s Succeeded Scheduled 40s-41s", "50s Succeeded Scheduled 50s-51s"}, l.summary())
		close(store.release)
		stop(t, j)
	})
}

// The runs held for a Reclaim meet the overlap policy as they would have,
// each call's in turn, once the claim's run has started: under
// OverlapReplace each held slot replaces the one before it in the queue,
// and the latest runs after the Recovered run; under OverlapAllow with a
// limit of 2, the Recovered run and the first held slot take both places,
// and the others are Skipped.
func TestHeldRunsMeetThePolicyOneByOne(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []schedule.Option
		want []string // records, or starts, that must be there at 19.5s
	}{
		// 11.25s: the job asks for the claim; the answer comes at 16.25s.
		// The slots 12s, 14s and 16s are held meanwhile.
		{"Replace", []schedule.Option{schedule.WithOverlap(schedule.OverlapReplace)},
			[]string{"12s Skipped Scheduled", "14s Skipped Scheduled", "17.25s start Scheduled due 16s"}},
		{"Allow/2", []schedule.Option{schedule.WithOverlap(schedule.OverlapAllow), schedule.WithMaxParallel(2)},
			[]string{"16.25s start Scheduled due 12s", "14s Skipped Scheduled", "16s Skipped Scheduled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				store := newLeaseStore(9 * time.Second)
				deadClaim(t, store)
				store.slow = 5 * time.Second // within a lease
				opts := append([]schedule.Option{schedule.WithStore(store), schedule.WithNode("n"),
					schedule.WithMisfire(schedule.MisfireSkip), schedule.WithObserver(l.observe)}, tc.opts...)
				j := schedule.NewJob("j", schedule.Every(2*time.Second), l.work(time.Second), opts...)
				start(t, j)
				time.Sleep(19500 * time.Millisecond)
				synctest.Wait()
				got, starts := l.summary(), l.starts()
				stop(t, j)
				assert.Contains(t, starts, "16.25s start Recovered due 0s", "the claim is taken over at 16.25s")
				for _, w := range tc.want {
					assert.Contains(t, append(got, starts...), w, "records: %v\nstarts: %v", got, starts)
				}
			})
		})
	}
}

// A slot held while a Reclaim is on its way back is Skipped by a Pause or
// a Stop that comes meanwhile, as a queued run is; the claim that then
// arrives is not run: it is given back, Released, for another node to
// take over. Stop waits for the Reclaim.
func TestHeldSlotPausedOrStopped(t *testing.T) {
	for _, tc := range []struct {
		name string
		act  func(*schedule.Job) // at 20.5s, the slot 20s held
	}{
		{"Pause", func(j *schedule.Job) { j.Pause() }},
		{"Stop", func(j *schedule.Job) { require.NoError(t, j.Stop(context.Background())) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				j, store := slowReclaimJob(t, &l)
				time.Sleep(20500 * time.Millisecond)
				synctest.Wait()
				assert.Equal(t, []string{"10s Succeeded Scheduled 10s-17s"}, l.summary(), "the slot 20s is held")
				began := time.Now()
				tc.act(j)
				if tc.name == "Stop" {
					assert.Equal(t, 500*time.Millisecond, time.Since(began), "Stop waits for the Reclaim")
				} else {
					assert.Equal(t, []string{"10s Succeeded Scheduled 10s-17s", "20s Skipped Scheduled"}, l.summary(),
						"Skipped by Pause, before the claim arrives")
				}
				time.Sleep(5 * time.Second)
				stop(t, j)
				assert.Equal(t, []string{"10s Succeeded Scheduled 10s-17s", "20s Skipped Scheduled"}, l.summary())
				r := deadRecord(t, store)
				assert.Equal(t, schedule.Released, r.Status, "the claim taken over is given back")
				assert.Equal(t, 2, r.Attempt)
			})
		})
	}
}

// A slot that falls due while a Recovered run is in flight follows the
// overlap policy, except that OverlapReplace does not cancel a Recovered
// run: the slot waits for it, as under OverlapBufferOne.
func TestRecoveredRunUnderTheOverlapPolicy(t *testing.T) {
	skip := []string{"0s Succeeded Recovered 16s-22s", "10s Succeeded Scheduled 10s-16s", "20s Skipped Scheduled"}
	wait := []string{"0s Succeeded Recovered 16s-22s", "10s Succeeded Scheduled 10s-16s", "20s Succeeded Scheduled 22s-28s"}
	for _, tc := range []struct {
		name string
		opts []schedule.Option
		want []string
	}{
		{"Skip", nil, skip},
		{"BufferOne", []schedule.Option{schedule.WithOverlap(schedule.OverlapBufferOne)}, wait},
		{"Replace", []schedule.Option{schedule.WithOverlap(schedule.OverlapReplace)}, wait},
		{"Allow/1", []schedule.Option{schedule.WithOverlap(schedule.OverlapAllow), schedule.WithMaxParallel(1)}, skip},
		// Free at the look of 11.25s (one every Lease()/4 from Start):
		// the claim runs beside the run of 10s.
		{"Allow", []schedule.Option{schedule.WithOverlap(schedule.OverlapAllow)},
			[]string{"0s Succeeded Recovered 11.25s-17.25s", "10s Succeeded Scheduled 10s-16s", "20s Succeeded Scheduled 20s-26s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				store := newLeaseStore(9 * time.Second)
				deadClaim(t, store)
				opts := append([]schedule.Option{schedule.WithStore(store), schedule.WithNode("n"),
					schedule.WithMisfire(schedule.MisfireSkip), schedule.WithObserver(l.observe)}, tc.opts...)
				j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(6*time.Second), opts...)
				start(t, j)
				time.Sleep(29 * time.Second)
				stop(t, j)
				got := l.summary()
				slices.Sort(got)
				assert.Equal(t, tc.want, got)
				r := deadRecord(t, store)
				assert.Equal(t, schedule.Succeeded, r.Status)
				assert.Equal(t, 2, r.Attempt)
			})
		})
	}
}

// Run.Attempt is 1 for a run the job claimed, and the record's Attempt for
// a Recovered run.
func TestRunAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := newLeaseStore(9 * time.Second)
		deadClaim(t, store)
		var got []string
		work := l.work(time.Second)
		j := schedule.NewJob("j", schedule.Every(10*time.Second), func(ctx context.Context, r schedule.Run) error {
			l.mu.Lock()
			got = append(got, fmt.Sprintf("%s %s attempt %d", since(r.Due), r.Reason, r.Attempt))
			l.mu.Unlock()
			return work(ctx, r)
		}, schedule.WithStore(store), schedule.WithNode("n"), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(15 * time.Second)
		stop(t, j)
		l.mu.Lock()
		defer l.mu.Unlock()
		assert.Equal(t, []string{"10s Scheduled attempt 1", "0s Recovered attempt 2"}, got)
	})
}

// Expired claims planted among two replicas that keep running their own
// slots, under every overlap policy: each planted slot runs once, to its
// end, as Recovered, on one replica or the other, and the two never run
// two runs at once between them unless the policy is OverlapAllow.
//
// The clock is synctest's, so that a loaded machine cannot stall a run past
// its lease of 50 ms; the runs still interleave as the scheduler has them.
// A replica that did lose a lease (its run outlived it) rightly has its
// slot taken over, which may run twice, which the design does not promise
// against. The store names the nodes whose lease of each slot was taken
// over; exactly-once is asserted for the slots none of whose started runs
// lost its lease, which must be most of them.
func TestReclaimStress(t *testing.T) {
	for _, o := range []schedule.Overlap{schedule.OverlapSkip, schedule.OverlapBufferOne, schedule.OverlapReplace, schedule.OverlapAllow, schedule.OverlapBufferAll} {
		t.Run(o.String(), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				const dead = 40
				store := newLeaseStoreKeep(50*time.Millisecond, 1<<14)
				base := time.Now().Add(-time.Hour).Truncate(time.Second)
				for i := range dead {
					r := schedule.Record{Job: "j", Due: base.Add(time.Duration(i) * time.Millisecond), Status: schedule.Running, Node: "dead", Attempt: 1}
					require.NoError(t, store.Claim(context.Background(), r))
				}
				store.mu.Lock()
				for due, l := range store.leases { // the dead node's leases have expired
					l.until = time.Now().Add(-time.Millisecond)
					store.leases[due] = l
				}
				store.mu.Unlock()
				var mu sync.Mutex
				recovered := map[time.Time]int{}  // runs of each planted slot that reached their end
				attempts := map[time.Time][]int{} // the attempts of each Recovered slot that started a run
				var bad []string
				// The runs in flight on both replicas, by number; the pairs of
				// runs that were in flight at once; the runs whose lease was
				// lost or given up (a stall past a lease, which may overlap
				// the run that took over or came next).
				flying := map[int]bool{}
				var pairs [][2]int
				leaseGone := map[int]bool{}
				runs := 0
				var jobs []*schedule.Job
				for _, node := range []string{"a", "b"} {
					j := schedule.NewJob("j", schedule.Every(2*time.Millisecond), func(ctx context.Context, r schedule.Run) error {
						mu.Lock()
						if r.Reason == schedule.Recovered {
							attempts[r.Due] = append(attempts[r.Due], r.Attempt)
						}
						runs++
						id := runs
						for other := range flying {
							pairs = append(pairs, [2]int{id, other})
						}
						flying[id] = true
						mu.Unlock()
						select {
						case <-time.After(time.Duration(rand.IntN(3000)) * time.Microsecond):
						case <-ctx.Done():
						}
						mu.Lock()
						delete(flying, id)
						cause := context.Cause(ctx)
						leaseGone[id] = errors.Is(cause, schedule.ErrLeaseLost) || errors.Is(cause, schedule.ErrLeaseNotRenewed)
						store.mu.Lock()
						if l := store.leases[r.Due]; l.node != node || time.Now().After(l.until) {
							leaseGone[id] = true // stalled past its lease, unnoticed yet
						}
						store.mu.Unlock()
						if r.Reason == schedule.Recovered && ctx.Err() == nil {
							recovered[r.Due]++
						}
						mu.Unlock()
						return nil
					}, schedule.WithStore(store), schedule.WithNode(node), schedule.WithOverlap(o),
						schedule.WithMisfire(schedule.MisfireSkip),
						schedule.WithObserver(func(r schedule.Record) {
							if r.Reason == schedule.Recovered && r.Status != schedule.Succeeded && r.Status != schedule.Canceled && r.Status != schedule.Released {
								mu.Lock()
								bad = append(bad, fmt.Sprintf("%+v", r))
								mu.Unlock()
							}
						}))
					start(t, j)
					jobs = append(jobs, j)
				}
				deadline := time.Now().Add(10 * time.Second)
				for {
					mu.Lock()
					n := len(recovered)
					mu.Unlock()
					if n == dead || time.Now().After(deadline) {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				for _, j := range jobs {
					stop(t, j)
				}
				mu.Lock()
				defer mu.Unlock()
				store.mu.Lock()
				stalled := 0
				for i := range dead {
					due := base.Add(time.Duration(i) * time.Millisecond)
					from := store.takenFrom[due] // from[k-1]: the holder of attempt k, if its lease was taken over
					lost := slices.ContainsFunc(attempts[due], func(a int) bool { return len(from) >= a })
					switch {
					case len(from) == 0 || from[0] != "dead":
						t.Errorf("slot %v: taken over from %v, not from the dead node first", due, from)
					case lost:
						stalled++ // a run started, then its replica lost the lease: a second run is allowed
						assert.NotZero(t, recovered[due], "slot %v never ran to its end", due)
					default:
						assert.Equal(t, 1, recovered[due], "slot %v ran to its end %d times", due, recovered[due])
					}
				}
				store.mu.Unlock()
				assert.LessOrEqual(t, stalled, dead/4, "slots whose lease a live replica lost: too many to test exactly-once")
				if stalled > 0 {
					t.Logf("%d of %d planted slots were stalled past a lease", stalled, dead)
				}
				assert.Empty(t, bad[:min(len(bad), 3)], "%d Recovered runs did not run to their end", len(bad))
				if o != schedule.OverlapAllow {
					overlaps := 0
					for _, p := range pairs {
						if !leaseGone[p[0]] && !leaseGone[p[1]] {
							overlaps++
						}
					}
					assert.Zero(t, overlaps, "runs overlapped on the two replicas, neither of which lost its lease")
				}
				h, err := store.History(context.Background(), "j", 1<<14)
				require.NoError(t, err)
				for i := range dead {
					due := base.Add(time.Duration(i) * time.Millisecond)
					idx := slices.IndexFunc(h, func(r schedule.Record) bool { return r.Due.Equal(due) })
					require.GreaterOrEqual(t, idx, 0)
					assert.Equal(t, schedule.Succeeded, h[idx].Status, "slot %v", due)
				}
			})
		})
	}
}
