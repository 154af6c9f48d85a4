package schedule_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/schedule"
)

// The slots missed before a Start whose Last failed get one record each,
// under OverlapAllow too, where several runs may be under way when the
// store answers.
func TestStartOutageRecordsOnceUnderOverlapAllow(t *testing.T) {
	for _, m := range []schedule.Misfire{schedule.MisfireSkip, schedule.MisfireRunOnce} {
		t.Run(m.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				store := &lateReplyStore{MemoryStore: schedule.NewMemoryStore(100)}
				succeeded(t, store.MemoryStore, at(10*time.Second))
				time.Sleep(35 * time.Second) // the process was down since 10s: 20s and 30s were missed
				store.set(true, 0)
				j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
					schedule.WithStore(store), schedule.WithMisfire(m), schedule.WithOverlap(schedule.OverlapAllow),
					schedule.WithObserver(l.observe))
				start(t, j)
				// The first Last after the outage (the run at 40s) takes 15s;
				// the run at 50s reads the store at once.
				store.set(false, 15*time.Second)
				time.Sleep(time.Minute)
				stop(t, j)
				n := map[string]int{}
				for _, r := range l.recs() {
					if r.Due.Before(at(35 * time.Second)) {
						n[fmt.Sprintf("%s %s", since(r.Due), r.Status)]++
					}
				}
				for k, c := range n {
					assert.Equal(t, 1, c, "records of %s", k)
				}
				assert.NotEmpty(t, n)
			})
		})
	}
}

// lateReplyStore is a MemoryStore whose Last fails while down, and whose
// first Last after that reads the store at once but answers late.
type lateReplyStore struct {
	*schedule.MemoryStore
	mu   sync.Mutex
	down bool
	late time.Duration
}

func (s *lateReplyStore) set(down bool, late time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down, s.late = down, late
}

func (s *lateReplyStore) Last(ctx context.Context, job string) (schedule.Record, error) {
	s.mu.Lock()
	down, late := s.down, s.late
	s.late = 0
	s.mu.Unlock()
	if down {
		return schedule.Record{}, errDown
	}
	r, err := s.MemoryStore.Last(ctx, job)
	time.Sleep(late)
	return r, err
}

// A job with no slot left after its start (At, Once, a schedule that
// ended) gets, once the store answers, the records a Start whose Last
// worked gives the slots it missed before the start: they are not left to
// a later slot's run, which never comes.
func TestStartOutageOfAJobWithNoSlotLeft(t *testing.T) {
	for _, m := range []schedule.Misfire{schedule.MisfireRunOnce, schedule.MisfireSkip} {
		t.Run(m.String(), func(t *testing.T) {
			got := map[bool][]string{}
			for _, down := range []bool{false, true} {
				synctest.Test(t, func(t *testing.T) {
					var l journal
					store := &scriptedStore{MemoryStore: schedule.NewMemoryStore(100)}
					succeeded(t, store.MemoryStore, at(10*time.Second))
					time.Sleep(75 * time.Second) // the process was down since 10s: 20s and 30s were missed
					store.set(func(s *scriptedStore) { s.lastDown = down })
					j := schedule.NewJob("j", schedule.At(at(10*time.Second), at(20*time.Second), at(30*time.Second)), l.work(time.Second),
						schedule.WithStore(store), schedule.WithMisfire(m), schedule.WithObserver(l.observe))
					start(t, j)
					store.set(func(s *scriptedStore) { s.lastDown = false })
					time.Sleep(time.Hour)
					stop(t, j)
					for _, r := range l.recs() {
						got[down] = append(got[down], fmt.Sprintf("%s %s %s", since(r.Due), r.Status, r.Reason))
					}
				})
			}
			assert.NotEmpty(t, got[false])
			assert.Equal(t, got[false], got[true], "Last up at Start, then Last down at Start")
		})
	}
}

// A Start within the grace period after a slot runs that slot on time,
// whether Last answered at the Start or only later.
func TestStartOutageWithinTheGrace(t *testing.T) {
	for _, m := range []schedule.Misfire{schedule.MisfireSkip} {
		t.Run(m.String(), func(t *testing.T) {
			got := map[bool][]string{}
			for _, down := range []bool{false, true} {
				synctest.Test(t, func(t *testing.T) {
					var l journal
					store := &scriptedStore{MemoryStore: schedule.NewMemoryStore(100)}
					succeeded(t, store.MemoryStore, at(10*time.Second))
					time.Sleep(70*time.Second + 500*time.Millisecond) // half a second after the slot of 70s
					store.set(func(s *scriptedStore) { s.lastDown = down })
					j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
						schedule.WithStore(store), schedule.WithMisfire(m), schedule.WithObserver(l.observe))
					start(t, j)
					store.set(func(s *scriptedStore) { s.lastDown = false })
					time.Sleep(20 * time.Second)
					stop(t, j)
					for _, r := range l.recs() {
						if r.Due.Equal(at(70 * time.Second)) {
							got[down] = append(got[down], fmt.Sprintf("%s %s %s", since(r.Due), r.Status, r.Reason))
						}
					}
				})
			}
			assert.NotEmpty(t, got[false])
			assert.Equal(t, got[false], got[true], "the slot of 70s: Last up at Start, then Last down at Start")
		})
	}
}

// A job started paused while its store's Last fails misses nothing before
// its start, as a job started paused does, and runs once resumed.
func TestStartOutagePaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := &scriptedStore{MemoryStore: schedule.NewMemoryStore(100)}
		succeeded(t, store.MemoryStore, at(-time.Minute))
		store.set(func(s *scriptedStore) { s.lastDown = true })
		j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
			schedule.WithStore(store), schedule.WithObserver(l.observe))
		j.Pause()
		start(t, j)
		store.set(func(s *scriptedStore) { s.lastDown = false })
		time.Sleep(15 * time.Second)
		j.Resume()
		time.Sleep(10 * time.Second)
		stop(t, j)
		assert.Equal(t, []string{"20s Succeeded Scheduled 20s-21s"}, l.summary())
	})
}
