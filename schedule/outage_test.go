package schedule_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/schedule"
)

// startRunAll starts a job "j" on store, under MisfireRunAll, whose 1s
// runs fall due every 10s, with l as its Observer. A claim that fails is
// not tried again (WithClaimRetry(0)): its slot is owed at once, which is
// what these tests are about.
func startRunAll(t *testing.T, l *journal, store schedule.Store, opts ...schedule.Option) *schedule.Job {
	opts = append([]schedule.Option{schedule.WithStore(store), schedule.WithMisfire(schedule.MisfireRunAll),
		schedule.WithObserver(l.observe), schedule.WithClaimRetry(0)}, opts...)
	j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second), opts...)
	start(t, j)
	return j
}

// succeeded records in store a run of job "j" due at due that succeeded.
func succeeded(t *testing.T, store *schedule.MemoryStore, due time.Time) {
	ctx := context.Background()
	rec := schedule.Record{Job: "j", Due: due, Status: schedule.Running}
	require.NoError(t, store.Claim(ctx, rec))
	rec.Status = schedule.Succeeded
	require.NoError(t, store.Finish(ctx, rec))
}

// scriptedStore is a MemoryStore whose Claim fails while claimsDown is set
// (Last still answering, as a database whose writes are locked does), and
// whose Last fails while lastDown is set, or first waits slowLast once.
type scriptedStore struct {
	*schedule.MemoryStore
	mu         sync.Mutex
	claimsDown bool
	finishDown bool
	lastDown   bool
	slowLast   time.Duration
}

func (s *scriptedStore) set(f func(s *scriptedStore)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func (s *scriptedStore) Claim(ctx context.Context, r schedule.Record) error {
	s.mu.Lock()
	down := s.claimsDown
	s.mu.Unlock()
	if down {
		return errDown
	}
	return s.MemoryStore.Claim(ctx, r)
}

func (s *scriptedStore) ClaimRun(ctx context.Context, r schedule.Record, c schedule.Concurrency) (time.Time, error) {
	s.mu.Lock()
	down := s.claimsDown
	s.mu.Unlock()
	if down {
		return time.Time{}, errDown
	}
	return s.MemoryStore.ClaimRun(ctx, r, c)
}

func (s *scriptedStore) Finish(ctx context.Context, r schedule.Record) error {
	s.mu.Lock()
	down := s.finishDown
	s.mu.Unlock()
	if down {
		return errDown
	}
	return s.MemoryStore.Finish(ctx, r)
}

func (s *scriptedStore) Last(ctx context.Context, job string) (schedule.Record, error) {
	s.mu.Lock()
	down, slow := s.lastDown, s.slowLast
	s.slowLast = 0
	s.mu.Unlock()
	if down {
		return schedule.Record{}, errDown
	}
	time.Sleep(slow)
	return s.MemoryStore.Last(ctx, job)
}

// While claims fail but Last answers, each slot is reported Skipped once:
// the catch-up of the slots already owed stops at the first claim that
// fails, rather than reporting every owed slot again at every slot. Once
// claims work again, every owed slot runs once.
func TestClaimsDownLastUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := &scriptedStore{MemoryStore: schedule.NewMemoryStore(100)}
		j := startRunAll(t, &l, store)
		time.Sleep(15 * time.Second)
		store.set(func(s *scriptedStore) { s.claimsDown = true })
		time.Sleep(30 * time.Second) // 45s
		store.set(func(s *scriptedStore) { s.claimsDown = false })
		time.Sleep(13 * time.Second) // 58s
		stop(t, j)
		assert.Equal(t, []string{"10s Succeeded Scheduled 10s-11s",
			"20s Skipped Scheduled", "30s Skipped Scheduled", "40s Skipped Scheduled",
			"20s Succeeded CatchUp 50s-51s", "30s Succeeded CatchUp 51s-52s", "40s Succeeded CatchUp 52s-53s",
			"50s Succeeded Scheduled 53s-54s"}, l.summary())
	})
}

// lateScheduler calls back a millisecond after it is asked to, as a busy
// machine does.
type lateScheduler struct{}

func (lateScheduler) AfterFunc(d time.Duration, f func()) circulation.Timer {
	return time.AfterFunc(d+time.Millisecond, f)
}

// A new job, with no record, whose first slot's claim fails, catches that
// slot up once the store answers, even though its timer fired after the
// slot's due time.
func TestFirstClaimFailsOnANewJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := &flakyStore{MemoryStore: schedule.NewMemoryStore(100)}
		j := startRunAll(t, &l, store, schedule.WithScheduler(lateScheduler{}))
		time.Sleep(5 * time.Second)
		store.setDown(true)
		time.Sleep(10 * time.Second) // 15s
		store.setDown(false)
		time.Sleep(13 * time.Second) // 28s
		stop(t, j)
		assert.Equal(t, []string{"10s Skipped Scheduled",
			"10s Succeeded CatchUp 20.001s-21.001s", "20s Succeeded Scheduled 21.001s-22.001s"}, l.summary())
	})
}

// Under OverlapAllow, a claim that fails while the slots missed before a
// start are being caught up is caught up later, with them: the catch-up
// does not take the new failure for one it has handled. Here the job
// starts while Last fails; Last answers 15s after the store is back, as
// claims fail for a while: the slots before the start and the slot of 50s
// whose claims failed run at the next slot, each once.
func TestClaimFailsDuringACatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := &scriptedStore{MemoryStore: schedule.NewMemoryStore(100)}
		succeeded(t, store.MemoryStore, at(10*time.Second))
		time.Sleep(35 * time.Second) // the process was down since 10s
		store.set(func(s *scriptedStore) { s.lastDown = true })
		j := startRunAll(t, &l, store, schedule.WithOverlap(schedule.OverlapAllow))
		store.set(func(s *scriptedStore) { s.lastDown, s.slowLast = false, 15*time.Second })
		time.Sleep(10 * time.Second) // 45s: the Last of 36s answers at 51s
		store.set(func(s *scriptedStore) { s.claimsDown, s.lastDown = true, true })
		time.Sleep(7 * time.Second) // 52s: the claim of 50s failed
		store.set(func(s *scriptedStore) { s.claimsDown, s.lastDown = false, false })
		time.Sleep(13 * time.Second) // 65s
		stop(t, j)
		assert.Equal(t, []string{"40s Succeeded Scheduled 40s-41s", "50s Skipped Scheduled",
			"20s Skipped CatchUp", "30s Skipped CatchUp",
			"20s Succeeded CatchUp 1m0s-1m1s", "30s Succeeded CatchUp 1m1s-1m2s", "50s Succeeded CatchUp 1m2s-1m3s",
			"1m0s Succeeded Scheduled 1m3s-1m4s"}, l.summary())
	})
}

// A catch-up stops when the job is paused during it: the owed slots left
// do not run, nor does the slot whose run was catching up, and after
// Resume the job takes the first slot after it, as Resume promises.
func TestPauseDuringACatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := &flakyStore{MemoryStore: schedule.NewMemoryStore(100)}
		j := startRunAll(t, &l, store)
		time.Sleep(15 * time.Second)
		store.setDown(true)
		time.Sleep(30 * time.Second) // 45s
		store.setDown(false)
		time.Sleep(5*time.Second + 500*time.Millisecond) // 50.5s: catching up 20s
		j.Pause()
		time.Sleep(5 * time.Second) // 55.5s
		j.Resume()
		time.Sleep(10 * time.Second) // 65.5s
		stop(t, j)
		assert.Equal(t, []string{"10s Succeeded Scheduled 10s-11s",
			"20s Skipped Scheduled", "30s Skipped Scheduled", "40s Skipped Scheduled",
			"20s Succeeded CatchUp 50s-51s", "50s Skipped Scheduled", "1m0s Succeeded Scheduled 1m0s-1m1s"}, l.summary())
	})
}

// A pause and a resume both made while a catch-up runs stop it as a
// pause alone does: the slot whose run was catching up is before the
// first slot Resume takes, and does not run.
func TestPauseAndResumeDuringACatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := &flakyStore{MemoryStore: schedule.NewMemoryStore(100)}
		j := startRunAll(t, &l, store)
		time.Sleep(15 * time.Second)
		store.setDown(true)
		time.Sleep(30 * time.Second) // 45s
		store.setDown(false)
		time.Sleep(5*time.Second + 300*time.Millisecond) // 50.3s: catching up 20s
		j.Pause()
		time.Sleep(300 * time.Millisecond)
		j.Resume() // 50.6s
		time.Sleep(15 * time.Second)
		stop(t, j)
		assert.Equal(t, []string{"10s Succeeded Scheduled 10s-11s",
			"20s Skipped Scheduled", "30s Skipped Scheduled", "40s Skipped Scheduled",
			"20s Succeeded CatchUp 50s-51s", "50s Skipped Scheduled", "1m0s Succeeded Scheduled 1m0s-1m1s"}, l.summary())
	})
}
