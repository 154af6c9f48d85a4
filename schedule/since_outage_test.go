package schedule_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/schedule"
)

// A once task defined before its time (WithSince), whose time passed while
// no process ran it, runs once at the start under MisfireRunOnce and
// MisfireRunAll and is recorded Missed under MisfireSkip, even if the
// store's Last fails at that Start (a brief outage): when the store
// answers again and has no record, the job owes the slots since it has
// been scheduled, as Start would have found.
func TestSinceAfterAStartOutage(t *testing.T) {
	for _, c := range []struct {
		m    schedule.Misfire
		want []string
	}{
		{schedule.MisfireRunOnce, []string{"1m0s Succeeded CatchUp"}},
		{schedule.MisfireRunAll, []string{"1m0s Succeeded CatchUp"}},
		{schedule.MisfireSkip, []string{"1m0s Missed CatchUp"}},
	} {
		t.Run(fmt.Sprint(c.m), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &flakyStore{MemoryStore: schedule.NewMemoryStore(100)}
				time.Sleep(2 * time.Minute) // defined at 0s, due at 1m: the process was down
				var l journal
				j := schedule.NewJob("j", schedule.Once(at(time.Minute)), l.work(time.Second),
					schedule.WithStore(store), schedule.WithMisfire(c.m), schedule.WithSince(at(0)))
				store.setDown(true) // Last fails at Start
				start(t, j)
				store.setDown(false) // back a moment later
				time.Sleep(time.Minute)
				stop(t, j)
				assert.Equal(t, c.want, history(t, store.MemoryStore))
			})
		})
	}
}
