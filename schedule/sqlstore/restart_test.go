package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// midSlot sleeps until the middle of a slot of every d, so that no slot
// falls due during the next few milliseconds' work, and returns now.
func midSlot(d time.Duration) time.Time {
	now := time.Now()
	time.Sleep(d - time.Duration(now.UnixNano())%d + d/2)
	return time.Now()
}

// fates returns the records of job as "status reason" by due, and the
// dues in order.
func fates(t *testing.T, s *sqlstore.Store, job string) map[time.Time]string {
	t.Helper()
	h, err := s.History(ctx, job, 1000)
	require.NoError(t, err)
	m := map[time.Time]string{}
	for _, r := range h {
		m[r.Due.UTC()] = r.Status.String() + " " + r.Reason.String()
	}
	return m
}

// TestRestartOwesTheFirstSlotsOfANewJob stops a job that never ran before
// its first slot, and starts it again, as a restarted process, two slots
// later: the store remembered since when it is scheduled, so the slots in
// between are owed, by the Misfire policy, and each one's fate is in the
// store. Before, a job with no record caught up nothing: the slots were
// lost, with no trace.
func TestRestartOwesTheFirstSlotsOfANewJob(t *testing.T) {
	const every = 400 * time.Millisecond
	for _, m := range []schedule.Misfire{schedule.MisfireRunOnce, schedule.MisfireRunAll, schedule.MisfireSkip} {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			eachBackend(t, func(t *testing.T, b backend) {
				dsn := b.dsn(t)
				job := func(s *sqlstore.Store) *schedule.Job {
					return schedule.NewJob("j", schedule.Every(every), func(context.Context, schedule.Run) error { return nil },
						schedule.WithStore(s), schedule.WithMisfire(m), schedule.WithGrace(50*time.Millisecond))
				}
				first := midSlot(every)
				j := job(newStore(t, b, dsn))
				require.NoError(t, j.Start(ctx))
				require.NoError(t, j.Stop(ctx)) // before its first slot: no record
				time.Sleep(2 * every)
				restart := midSlot(every) // three slots after the first start
				s := newStore(t, b, dsn)  // a new process
				j = job(s)
				require.NoError(t, j.Start(ctx))
				time.Sleep(every / 4)
				require.NoError(t, j.Stop(ctx))

				var owed []time.Time
				for d := schedule.Every(every).Next(first); d.Before(restart); d = d.Add(every) {
					owed = append(owed, d.UTC())
				}
				require.Len(t, owed, 3)
				want := map[time.Time]string{}
				for i, d := range owed {
					switch {
					case m == schedule.MisfireRunAll, m == schedule.MisfireRunOnce && i == len(owed)-1:
						want[d] = "Succeeded CatchUp"
					default:
						want[d] = "Missed CatchUp"
					}
				}
				assert.Equal(t, want, fates(t, s, "j"))
			})
		})
	}
}

// TestRestartRunsAOnceTaskDueWhileDown defines a once task in the
// definitions table, loads it in a Table that stops before its time, and
// loads it again in a new process after its time: under run-once it runs
// at the start, under skip it is recorded Missed. The task never ran, and
// has no record: it is owed since its definition was created.
func TestRestartRunsAOnceTaskDueWhileDown(t *testing.T) {
	for _, misfire := range []string{"run-once", "skip"} {
		t.Run(misfire, func(t *testing.T) {
			t.Parallel()
			eachBackend(t, func(t *testing.T, b backend) {
				dsn := b.dsn(t)
				s := newStore(t, b, dsn)
				at := time.Now().Add(1500 * time.Millisecond).Truncate(time.Second) // a second from now, or two
				var mu sync.Mutex
				var ran []time.Time
				handlers := map[string]cron.Handler{"h": func(_ context.Context, _ string, r schedule.Run) error {
					mu.Lock()
					ran = append(ran, r.Due)
					mu.Unlock()
					return nil
				}}
				_, err := s.Definitions().Create(ctx, cron.Task{Name: "once", Handler: "h", Spec: "* * * * * *",
					Start: at, End: at.Add(time.Hour), Once: true, Misfire: misfire})
				require.NoError(t, err)
				tab := cron.NewTable(handlers, cron.WithStore(s))
				require.NoError(t, tab.Follow(ctx, s.Definitions()))
				require.NoError(t, tab.Stop(ctx))                  // down before the task's time
				time.Sleep(time.Until(at) + 1500*time.Millisecond) // past the default grace of 1s

				s2 := newStore(t, b, dsn) // a new process
				tab = cron.NewTable(handlers, cron.WithStore(s2))
				require.NoError(t, tab.Follow(ctx, s2.Definitions()))
				time.Sleep(300 * time.Millisecond)
				ts := tab.Tasks()
				require.NoError(t, tab.Stop(ctx))
				require.Len(t, ts, 1)
				assert.True(t, ts[0].Next.IsZero(), "a once task has no run left")
				want := map[time.Time]string{at.UTC(): "Missed CatchUp"}
				if misfire == "run-once" {
					want[at.UTC()] = "Succeeded CatchUp"
					mu.Lock()
					assert.Len(t, ran, 1)
					mu.Unlock()
				}
				assert.Equal(t, want, fates(t, s2, "once"))
			})
		})
	}
}

// TestRetryOnReplicas runs one slot on two replicas, whose job fails its
// first attempt: one replica claims the slot and runs both attempts; the
// pause between them is longer than the lease, which the job renews, so
// the other replica never takes the slot over; the store's record is the
// second attempt's, Succeeded.
func TestRetryOnReplicas(t *testing.T) {
	t.Parallel() // real time, mostly waiting: beside the others of its kind
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		const lease = time.Second
		due := time.Now().Add(500 * time.Millisecond).Round(0)
		var mu sync.Mutex
		var attempts []string
		var jobs []*schedule.Job
		for i := range 2 {
			node := fmt.Sprint("n", i)
			s := newStore(t, b, dsn, sqlstore.WithLease(lease))
			jobs = append(jobs, schedule.NewJob("r", schedule.Once(due), func(_ context.Context, r schedule.Run) error {
				mu.Lock()
				attempts = append(attempts, fmt.Sprintf("%s attempt %d %s", node, r.Attempt, r.Reason))
				mu.Unlock()
				if r.Attempt == 1 {
					return fmt.Errorf("the first attempt fails")
				}
				return nil
			}, schedule.WithStore(s), schedule.WithNode(node), schedule.WithRetry(3, 3*lease/2)))
		}
		for _, j := range jobs {
			require.NoError(t, j.Start(ctx))
		}
		s := newStore(t, b, dsn)
		require.Eventually(t, func() bool {
			r, err := s.Last(ctx, "r")
			return err == nil && r.Status == schedule.Succeeded
		}, 10*time.Second, 50*time.Millisecond)
		time.Sleep(lease) // a takeover, if any, would come now
		for _, j := range jobs {
			require.NoError(t, j.Stop(ctx))
		}
		r, err := s.Last(ctx, "r")
		require.NoError(t, err)
		assert.Equal(t, schedule.Succeeded, r.Status)
		assert.Equal(t, 2, r.Attempt)
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, attempts, 2, "%v", attempts)
		assert.Equal(t, attempts[0][:2], attempts[1][:2], "both attempts on one replica: %v", attempts)
		assert.Equal(t, attempts[0][:2]+" attempt 1 Scheduled", attempts[0])
		assert.Equal(t, attempts[0][:2]+" attempt 2 Scheduled", attempts[1])
	})
}
