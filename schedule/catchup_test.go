package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// downLeaseStore is a leaseStore whose Claim fails while down is set,
// and whose Finish fails while finishDown is.
type downLeaseStore struct {
	*leaseStore
	down       atomic.Bool
	finishDown atomic.Bool
}

func (s *downLeaseStore) Finish(ctx context.Context, r schedule.Record) error {
	if s.finishDown.Load() {
		return errDown
	}
	return s.leaseStore.Finish(ctx, r)
}

func (s *downLeaseStore) Claim(ctx context.Context, r schedule.Record) error {
	if s.down.Load() {
		return errDown
	}
	return s.leaseStore.Claim(ctx, r)
}

func (s *downLeaseStore) ClaimRun(ctx context.Context, r schedule.Record, c schedule.Concurrency) (time.Time, error) {
	if s.down.Load() {
		return time.Time{}, errDown
	}
	return s.leaseStore.ClaimRun(ctx, r, c)
}

// A catch-up run that loses its lease does not cancel the context it
// shares with the Scheduled run that was catching up: before, that slot
// was then claimed and recorded Canceled "lease lost" without its Func
// ever running, though its own lease was never lost, and nothing ran it
// again. (OverlapAllow: the thief's run of the slot 20s is in flight on
// another node meanwhile, which under the other policies would make the
// job busy for the slot 30s.)
func TestLeaseLostInACatchUpCancelsTheSlotAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := &downLeaseStore{leaseStore: newLeaseStore(9 * time.Second)}
		j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(5*time.Second),
			schedule.WithStore(store), schedule.WithNode("n"), schedule.WithMisfire(schedule.MisfireRunAll),
			schedule.WithOverlap(schedule.OverlapAllow), schedule.WithObserver(l.observe), schedule.WithClaimRetry(0))
		start(t, j)
		time.Sleep(15 * time.Second)
		store.down.Store(true)
		time.Sleep(10 * time.Second) // 25s: the claim of 20s failed
		store.down.Store(false)
		time.Sleep(6 * time.Second) // 31s: the catch-up of 20s runs since 30s
		store.steal(at(20 * time.Second))
		time.Sleep(8 * time.Second) // 39s
		stop(t, j)
		var r30 []schedule.Record
		for _, r := range l.recs() {
			if r.Due.Equal(at(30 * time.Second)) {
				r30 = append(r30, r)
			}
		}
		require.Len(t, r30, 1, "%v", l.summary())
		assert.Equal(t, schedule.Succeeded, r30[0].Status, "the 30s slot: %s (%v)", r30[0].Err, l.summary())
		assert.Contains(t, l.starts(), "33s start Scheduled due 30s", "the 30s slot never ran")
	})
}

// A Func that calls runtime.Goexit on a LeaseStore leaves the renewal of
// its lease running: after Stop, the lease is still renewed, so the slot
// is never taken over and a Trigger of the job outlives it.
func TestGoexitOnALeaseStoreStopsRenewing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newLeaseStore(9 * time.Second)
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(context.Context, schedule.Run) error {
			runtime.Goexit()
			return nil
		}, schedule.WithStore(store), schedule.WithNode("n"))
		start(t, j)
		time.Sleep(65 * time.Second)
		stop(t, j)
		assert.Empty(t, renewalsAfter(store), "renewals of the 1m slot's lease after Stop")
	})
}

// hangStore is a MemoryStore whose Claim fails while down is set, and
// waits for its context to be done while hang is set, as a database
// driver does.
type hangStore struct {
	*schedule.MemoryStore
	down, hang atomic.Bool
}

func (s *hangStore) Claim(ctx context.Context, r schedule.Record) error {
	if s.down.Load() {
		return errDown
	}
	if s.hang.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.MemoryStore.Claim(ctx, r)
}

func (s *hangStore) ClaimRun(ctx context.Context, r schedule.Record, c schedule.Concurrency) (time.Time, error) {
	if s.down.Load() {
		return time.Time{}, errDown
	}
	if s.hang.Load() {
		<-ctx.Done()
		return time.Time{}, ctx.Err()
	}
	return s.MemoryStore.ClaimRun(ctx, r, c)
}

// A slot whose claim failed is reported Skipped once. When the job is
// stopped while the catch-up claims that slot again, the catch-up reports
// it Skipped a second time.
func TestStopDuringACatchUpClaimReportsTheSlotOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := &hangStore{MemoryStore: schedule.NewMemoryStore(100)}
		j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
			schedule.WithStore(store), schedule.WithMisfire(schedule.MisfireRunAll), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(15 * time.Second)
		store.down.Store(true)
		time.Sleep(10 * time.Second) // 25s: the claim of 20s failed
		store.down.Store(false)
		store.hang.Store(true)
		time.Sleep(10 * time.Second) // 35s: the catch-up's claim of 20s hangs
		stop(t, j)
		n := 0
		for _, r := range l.recs() {
			if r.Due.Equal(at(20 * time.Second)) {
				n++
			}
		}
		assert.Equal(t, 1, n, "records of the 20s slot: %v", l.summary())
	})
}

// A job started while its store's Last fails treats it as an outage from
// its first slot. If Last still fails at that slot but the claim works,
// the slot runs and the job takes its Due as the latest it knows: the
// slots missed before Start, after the store's last record, are then
// never caught up under MisfireRunAll, nor reported Missed.
func TestStartOutageThenClaimWorksBeforeLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := &scriptedStore{MemoryStore: schedule.NewMemoryStore(100)}
		succeeded(t, store.MemoryStore, at(10*time.Second))
		time.Sleep(35 * time.Second) // the process was down since 10s
		store.set(func(s *scriptedStore) { s.lastDown = true })
		j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
			schedule.WithStore(store), schedule.WithMisfire(schedule.MisfireRunAll), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(10 * time.Second) // 45s: 40s ran, its Last having failed
		store.set(func(s *scriptedStore) { s.lastDown = false })
		time.Sleep(13 * time.Second) // 58s
		stop(t, j)
		var dues []string
		for _, r := range l.recs() {
			dues = append(dues, since(r.Due))
		}
		assert.Contains(t, dues, "20s", "%v", l.summary())
		assert.Contains(t, dues, "30s", "%v", l.summary())
	})
}

// Under OverlapReplace, a slot that falls due while the run of a slot is
// catching up after an outage replaces it: the owed slots the catch-up had
// not reached yet are dropped, with no record but the Skipped of their
// first failed claim, and the next slot does not catch them up either.
func TestReplaceDuringACatchUpKeepsTheOwedSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := &flakyStore{MemoryStore: schedule.NewMemoryStore(100)}
		j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(6*time.Second),
			schedule.WithStore(store), schedule.WithMisfire(schedule.MisfireRunAll),
			schedule.WithOverlap(schedule.OverlapReplace), schedule.WithObserver(l.observe), schedule.WithClaimRetry(0))
		start(t, j)
		time.Sleep(15 * time.Second)
		store.setDown(true)
		time.Sleep(30 * time.Second) // 45s: the claims of 20s, 30s, 40s failed
		store.setDown(false)
		time.Sleep(33 * time.Second) // 78s
		stop(t, j)
		var ran []string
		for _, s := range l.starts() {
			ran = append(ran, s[strings.Index(s, " due ")+5:])
		}
		assert.Contains(t, ran, "40s", "the owed 40s slot never ran: %v", l.summary())
	})
}

// Slots missed while the process was down get a record each, run or
// Missed, whether Last answered at Start or the store was down then: a
// Start outage's catch-up runs the oldest up to the catch-up limit, as
// Start does, but reports none of the others Missed.
func TestStartOutageReportsTheSlotsPastTheLimitMissed(t *testing.T) {
	for _, down := range []bool{false, true} {
		var dues []string
		synctest.Test(t, func(t *testing.T) {
			var l journal
			store := &scriptedStore{MemoryStore: schedule.NewMemoryStore(100)}
			succeeded(t, store.MemoryStore, at(10*time.Second))
			time.Sleep(75 * time.Second) // the process was down since 10s
			store.set(func(s *scriptedStore) { s.lastDown = down })
			j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
				schedule.WithStore(store), schedule.WithMisfire(schedule.MisfireRunAll), schedule.WithCatchUpLimit(2),
				schedule.WithObserver(l.observe))
			start(t, j)
			store.set(func(s *scriptedStore) { s.lastDown = false })
			time.Sleep(10 * time.Second) // 85s
			stop(t, j)
			var ts []time.Time
			for _, r := range l.recs() {
				if r.Due.Before(at(70 * time.Second)) {
					ts = append(ts, r.Due)
				}
			}
			slices.SortFunc(ts, time.Time.Compare)
			for _, d := range slices.Compact(ts) {
				dues = append(dues, since(d))
			}
		})
		assert.Equal(t, []string{"20s", "30s", "40s", "50s", "1m0s"}, dues, "Last down at Start: %v", down)
	}
}

// The slots missed while the process was down get the same records
// whether Last answered at Start or failed then and answered later, under
// every Misfire policy: a Start outage under MisfireRunOnce or MisfireSkip
// reported none of them, and ran none.
func TestStartOutageGivesTheRecordsOfAStart(t *testing.T) {
	for _, m := range []schedule.Misfire{schedule.MisfireRunOnce, schedule.MisfireSkip, schedule.MisfireRunAll} {
		t.Run(m.String(), func(t *testing.T) {
			got := map[bool][]string{}
			for _, down := range []bool{false, true} {
				synctest.Test(t, func(t *testing.T) {
					var l journal
					store := &scriptedStore{MemoryStore: schedule.NewMemoryStore(100)}
					succeeded(t, store.MemoryStore, at(10*time.Second))
					time.Sleep(75 * time.Second) // the process was down since 10s
					store.set(func(s *scriptedStore) { s.lastDown = down })
					j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
						schedule.WithStore(store), schedule.WithMisfire(m), schedule.WithObserver(l.observe))
					start(t, j)
					store.set(func(s *scriptedStore) { s.lastDown = false })
					time.Sleep(20 * time.Second) // 95s
					stop(t, j)
					for _, r := range l.recs() {
						if r.Due.Before(at(75 * time.Second)) {
							got[down] = append(got[down], fmt.Sprintf("%s %s %s", since(r.Due), r.Status, r.Reason))
						}
					}
					slices.Sort(got[down])
				})
			}
			assert.NotEmpty(t, got[false])
			assert.Equal(t, got[false], got[true], "Last up at Start, then Last down at Start")
		})
	}
}

// adoptingStore is a MemoryStore whose Last fails while down is set and
// otherwise takes slow, and which, like a store that adopts its own live
// claim, lets a CatchUp claim a slot that has a record.
type adoptingStore struct {
	*schedule.MemoryStore
	down atomic.Bool
	slow time.Duration
}

func (s *adoptingStore) Last(ctx context.Context, job string) (schedule.Record, error) {
	if s.down.Load() {
		return schedule.Record{}, errDown
	}
	time.Sleep(s.slow)
	return s.MemoryStore.Last(ctx, job)
}

func (s *adoptingStore) Claim(ctx context.Context, r schedule.Record) error {
	err := s.MemoryStore.Claim(ctx, r)
	if errors.Is(err, schedule.ErrClaimed) && r.Reason == schedule.CatchUp {
		return nil
	}
	return err
}

func (s *adoptingStore) ClaimRun(ctx context.Context, r schedule.Record, c schedule.Concurrency) (time.Time, error) {
	sent, err := s.MemoryStore.ClaimRun(ctx, r, c)
	if errors.Is(err, schedule.ErrClaimed) && r.Reason == schedule.CatchUp {
		return time.Now(), nil
	}
	return sent, err
}

// Under OverlapAllow two runs may catch up the same owed slots at once:
// here the slots before a Start whose Last failed, while Last takes longer
// than a slot. Even on a store that lets a slot be claimed twice, the job
// never runs one slot twice at once.
func TestOverlappingCatchUpsRunASlotOnceAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		flying := map[time.Time]int{}
		most := 0
		store := &adoptingStore{MemoryStore: schedule.NewMemoryStore(100), slow: 15 * time.Second}
		succeeded(t, store.MemoryStore, at(10*time.Second))
		time.Sleep(35 * time.Second) // the process was down since 10s
		store.down.Store(true)
		j := schedule.NewJob("j", schedule.Every(10*time.Second), func(ctx context.Context, r schedule.Run) error {
			mu.Lock()
			flying[r.Due]++
			most = max(most, flying[r.Due])
			mu.Unlock()
			time.Sleep(15 * time.Second)
			mu.Lock()
			flying[r.Due]--
			mu.Unlock()
			return nil
		}, schedule.WithStore(store), schedule.WithMisfire(schedule.MisfireRunAll), schedule.WithOverlap(schedule.OverlapAllow))
		start(t, j)
		store.down.Store(false)
		time.Sleep(2 * time.Minute)
		stop(t, j)
		assert.Equal(t, 1, most, "runs of one slot at once")
	})
}

// Two Jobs of one name on one store, started together after the slots
// from 20s to 60s were missed, under MisfireRunAll and OverlapSkip: each
// missed slot runs once, one after another, on one of them. A catch-up
// claim that finds the other Job's run in flight waits for it, as the
// catch-up of one Job runs its slots one after another; were it Skipped,
// as a new slot that finds a run in flight is, the two would skip every
// other slot of each other's.
func TestReplicasRestartedTogetherCatchUpEverySlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := schedule.NewMemoryStore(100)
		succeeded(t, store, at(10*time.Second))
		time.Sleep(65 * time.Second) // both were down since 10s
		var jobs []*schedule.Job
		for _, node := range []string{"a", "b"} {
			j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(2*time.Second),
				schedule.WithStore(store), schedule.WithNode(node), schedule.WithObserver(l.observe),
				schedule.WithMisfire(schedule.MisfireRunAll))
			start(t, j)
			jobs = append(jobs, j)
		}
		time.Sleep(time.Minute)
		for _, j := range jobs {
			stop(t, j)
		}
		ran := map[string]int{}
		for _, r := range l.recs() {
			if r.Due.Before(at(70 * time.Second)) {
				ran[fmt.Sprint(since(r.Due), " ", r.Status, " ", r.Reason)]++
			}
		}
		assert.Equal(t, map[string]int{"20s Succeeded CatchUp": 1, "30s Succeeded CatchUp": 1, "40s Succeeded CatchUp": 1,
			"50s Succeeded CatchUp": 1, "1m0s Succeeded CatchUp": 1}, ran)
		var end time.Time
		for _, r := range l.recs() {
			if r.Start.IsZero() {
				continue // Skipped, Missed
			}
			assert.False(t, r.Start.Before(end), "%v starts before the run before it ends", r)
			end = r.End
		}
	})
}

// Two Jobs of one name restarted together catch up; one is shut down
// while it runs a catch-up, whose slot it hands over (Released). The
// other's catch-up waits for the job to be free, which only a takeover of
// that claim makes it: a run that waits so is not in flight, and the
// takeover does not wait for it. Every slot then runs once, on the Job
// left, and its schedule goes on.
func TestWaitingCatchUpLetsAClaimBeTakenOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var la, lb journal
		store := schedule.NewMemoryStore(100)
		succeeded(t, store, at(10*time.Second))
		time.Sleep(65 * time.Second)
		job := func(node string, l *journal) *schedule.Job {
			return schedule.NewJob("j", schedule.Every(10*time.Second), l.work(2*time.Second),
				schedule.WithStore(store), schedule.WithNode(node), schedule.WithObserver(l.observe),
				schedule.WithMisfire(schedule.MisfireRunAll))
		}
		a, b := job("a", &la), job("b", &lb)
		start(t, a)
		synctest.Wait() // a runs 20s
		start(t, b)
		time.Sleep(time.Second) // b's catch-up of 30s waits for a's run
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_ = a.Shutdown(ctx) // a's run of 20s is cut short and handed over
		cancel()
		time.Sleep(time.Minute)
		stop(t, b)
		ran := map[time.Time]int{}
		for _, r := range append(la.recs(), lb.recs()...) {
			if r.Status == schedule.Succeeded {
				ran[r.Due]++
			}
		}
		for d := 20 * time.Second; d <= 2*time.Minute; d += 10 * time.Second {
			if d == 70*time.Second {
				assert.LessOrEqual(t, ran[at(d)], 1, "slot %v", d) // due while the catch-ups ran: Skipped
				continue
			}
			assert.Equal(t, 1, ran[at(d)], "slot %v: %q %q", d, la.summary(), lb.summary())
		}
	})
}

// A slot whose claim failed is owed only under MisfireRunAll, which
// catches it up: under every policy, once the store is back and a slot has
// run, the job keeps nothing of the outage.
func TestAnOutageLeavesNothingKept(t *testing.T) {
	for _, m := range []schedule.Misfire{schedule.MisfireRunOnce, schedule.MisfireSkip, schedule.MisfireRunAll} {
		t.Run(m.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &flakyStore{MemoryStore: schedule.NewMemoryStore(100)}
				j := schedule.NewJob("j", schedule.Every(10*time.Second), func(context.Context, schedule.Run) error { return nil },
					schedule.WithStore(store), schedule.WithMisfire(m), schedule.WithClaimRetry(0))
				start(t, j)
				store.setDown(true)
				time.Sleep(15 * time.Second) // the slot at 10s: its claim fails
				store.setDown(false)
				time.Sleep(20 * time.Second) // the slots at 20s and 30s run
				synctest.Wait()
				assert.False(t, j.Rare(), "the job keeps the part of its state few jobs need")
				stop(t, j)
			})
		})
	}
}
