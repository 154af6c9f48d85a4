package schedule_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/schedule"
)

// slowNoteStore is a MemoryStore whose Note (a best-effort write of Missed
// records) takes 3 s; its claims and finishes are instant.
type slowNoteStore struct{ *schedule.MemoryStore }

func (s slowNoteStore) Note(ctx context.Context, rs []schedule.Record) error {
	select {
	case <-time.After(3 * time.Second):
	case <-ctx.Done():
	}
	return s.MemoryStore.Note(ctx, rs)
}

// lateOnceScheduler is the runtime's timers, but the first timer armed
// after late is set fires 3.5 s late: one late wake (a machine that was
// suspended, a stalled process).
type lateOnceScheduler struct {
	mu   sync.Mutex
	late bool
}

func (s *lateOnceScheduler) AfterFunc(d time.Duration, f func()) circulation.Timer {
	s.mu.Lock()
	if s.late {
		s.late = false
		d += 3500 * time.Millisecond
	}
	s.mu.Unlock()
	return time.AfterFunc(d, f)
}

// The Missed records of a late wake are written to the store off the job's
// timer: a store whose Note is slow (3 s here) while its claims are
// instant holds up no wake. Written in the timer's callback, the Note made
// the next wake late past the grace, its slots Missed and noted in turn,
// and one late wake cost a job every 2 s two slots of every three for good.
func TestSlowNoteHoldsUpNoWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := slowNoteStore{schedule.NewMemoryStore(1000)}
		sch := &lateOnceScheduler{}
		var l journal
		j := schedule.NewJob("j", schedule.Every(2*time.Second), l.work(0),
			schedule.WithStore(store), schedule.WithMisfire(schedule.MisfireSkip),
			schedule.WithScheduler(sch), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(3 * time.Second) // the slot at 2s ran; the timer for 4s is armed
		sch.mu.Lock()
		sch.late = true // the next arming (for 6s) fires 3.5 s late, at 9s
		sch.mu.Unlock()
		time.Sleep(60 * time.Second)
		stop(t, j)
		ran := 0
		for _, r := range l.recs() {
			if r.Status == schedule.Succeeded {
				ran++
			}
		}
		// Slots every 2 s over 63 s: about 31; one late wake may cost two.
		assert.GreaterOrEqual(t, ran, 25, "slots run; the Observer got %d records", len(l.recs()))
	})
}
