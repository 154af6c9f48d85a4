package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// fates returns the records of job as "status reason" by due.
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

// maxNoted is how many Missed records of one gap a Job writes to its
// store, the newest (schedule's maxNoted).
const maxNoted = 16

// TestRestartOwesTheFirstSlotsOfANewJob stops a job that never ran before
// its first slot, and starts it again, as a restarted process, two slots
// later: the store remembered since when it is scheduled, so the slots in
// between are owed, by the Misfire policy, and each one's fate is in the
// store. Before, a job with no record caught up nothing: the slots were
// lost, with no trace.
//
// No step is timed. The first process's job must not run a slot before it
// stops: if a loaded machine held its Start and Stop past one, which its
// record shows, the test tries again with another job. The owed slots are
// reckoned from what the store says of the job's since, and from when the
// second Start was called: the slots due after since and at least a grace
// before that call are owed; one due later, but before the Start returned,
// may be owed or the new process's own. The test waits for their final
// records, however long that takes, before it stops the job.
func TestRestartOwesTheFirstSlotsOfANewJob(t *testing.T) {
	const every = 400 * time.Millisecond
	const grace = 50 * time.Millisecond
	for _, m := range []schedule.Misfire{schedule.MisfireRunOnce, schedule.MisfireRunAll, schedule.MisfireSkip} {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			eachBackend(t, func(t *testing.T, b backend) {
				dsn := b.dsn(t)
				job := func(s *sqlstore.Store, name string) *schedule.Job {
					return schedule.NewJob(name, schedule.Every(every), func(context.Context, schedule.Run) error { return nil },
						schedule.WithStore(s), schedule.WithMisfire(m), schedule.WithGrace(grace))
				}
				first := newStore(t, b, dsn)
				var name string
				for i := 0; ; i++ {
					require.Less(t, i, 10, "every job ran a slot between its Start and its Stop, half a slot apart")
					name = fmt.Sprint("j", i)
					midSlot(every)
					j := job(first, name)
					require.NoError(t, j.Start(ctx))
					require.NoError(t, j.Stop(ctx)) // before its first slot: no record
					if _, err := first.Last(ctx, name); errors.Is(err, schedule.ErrNoRecord) {
						break
					}
				}
				since, err := first.Since(ctx, name, time.Now()) // the time the Start recorded, earlier
				require.NoError(t, err)
				time.Sleep(2 * every)
				midSlot(every)           // three slots after the first start
				s := newStore(t, b, dsn) // a new process
				j := job(s, name)
				called := time.Now()
				require.NoError(t, j.Start(ctx))
				returned := time.Now()

				var owed, either []time.Time
				for d := schedule.Every(every).Next(since); !d.After(returned); d = d.Add(every) {
					if d.Before(called.Add(-grace)) {
						owed = append(owed, d.UTC())
					} else {
						either = append(either, d.UTC())
					}
				}
				require.GreaterOrEqual(t, len(owed), 3)
				if m != schedule.MisfireRunAll && len(owed) > maxNoted {
					owed = owed[len(owed)-maxNoted:] // the older ones reach the Observer only
				}
				eventually(t, "a final record of each slot owed", func() bool {
					got := fates(t, s, name)
					for _, d := range append(owed, either...) {
						if f, ok := got[d]; !ok || strings.HasPrefix(f, "Running ") {
							return false
						}
					}
					return true
				})
				require.NoError(t, j.Stop(ctx))
				got := fates(t, s, name)

				// The fates each slot may have: one for each slot owed, by
				// the Misfire policy; more for a slot due while the Start
				// ran (owed, or the new process's own, which may also be
				// late past the grace, then a CatchUp of its own), and for
				// the last slot owed under MisfireRunOnce if such a slot
				// was caught up after it.
				may := map[time.Time][]string{}
				for i, d := range owed {
					switch {
					case m == schedule.MisfireRunAll, m == schedule.MisfireRunOnce && i == len(owed)-1:
						may[d] = []string{"Succeeded CatchUp"}
					default:
						may[d] = []string{"Missed CatchUp"}
					}
				}
				for _, d := range either {
					may[d] = []string{"Succeeded Scheduled", "Succeeded CatchUp"}
					if m == schedule.MisfireSkip || m == schedule.MisfireRunOnce && len(either) > 1 {
						may[d] = append(may[d], "Missed CatchUp")
					}
					// Under MisfireRunOnce the last slot owed is Missed if
					// a later one ran: caught up after it, or on time at
					// the Start (a loaded machine's Start reads the clock
					// late), which stands for the slots missed.
					if m == schedule.MisfireRunOnce && (got[d] == "Succeeded CatchUp" || got[d] == "Succeeded Scheduled") {
						may[owed[len(owed)-1]] = []string{"Succeeded CatchUp", "Missed CatchUp"}
					}
				}
				for d, fate := range got {
					if d.After(returned) {
						continue // the new process's own
					}
					if assert.Contains(t, may, d, "a record of a slot not owed: %s", fate) {
						assert.Contains(t, may[d], fate, "slot %v (since %v, Start %v to %v)", d, since, called, returned)
					}
				}
				for d := range may {
					assert.Contains(t, got, d, "slot %v has no record", d)
				}
			})
		})
	}
}

// TestRestartRunsAOnceTaskDueWhileDown defines a once task in the
// definitions table, loads it in a Table that stops before its time, and
// loads it again in a new process after its time: under run-once it runs
// at the start, under skip it is recorded Missed. The task never ran, and
// has no record: it is owed since its definition was created.
//
// The first Table must stop before the task's time: if a loaded machine
// held it past that time, which a record shows, the test tries again with
// another task, two seconds later. The second waits for the task's final
// record, however long that takes, before it stops.
func TestRestartRunsAOnceTaskDueWhileDown(t *testing.T) {
	for _, misfire := range []string{"run-once", "skip"} {
		t.Run(misfire, func(t *testing.T) {
			t.Parallel()
			eachBackend(t, func(t *testing.T, b backend) {
				dsn := b.dsn(t)
				s := newStore(t, b, dsn)
				var mu sync.Mutex
				var ran []time.Time
				handlers := map[string]cron.Handler{"h": func(_ context.Context, _ string, r schedule.Run) error {
					mu.Lock()
					ran = append(ran, r.Due)
					mu.Unlock()
					return nil
				}}
				var name string
				var at time.Time
				for i := 0; ; i++ {
					require.Less(t, i, 10, "every Table ran its task, due a second or more after it began")
					name = fmt.Sprint("once", i)
					at = time.Now().Add(time.Duration(1500+2000*i) * time.Millisecond).Truncate(time.Second) // a second from now, or more
					version, err := s.Definitions().Create(ctx, cron.Task{Name: name, Handler: "h", Spec: "* * * * * *",
						Start: at, End: at.Add(time.Hour), Once: true, Misfire: misfire})
					require.NoError(t, err)
					tab := cron.NewTable(handlers, cron.WithStore(s))
					require.NoError(t, tab.Follow(ctx, s.Definitions()))
					require.NoError(t, tab.Stop(ctx)) // down before the task's time
					if _, err := s.Last(ctx, name); errors.Is(err, schedule.ErrNoRecord) {
						break
					}
					require.NoError(t, s.Definitions().Delete(ctx, name, version))
				}
				mu.Lock()
				ran = nil
				mu.Unlock()
				time.Sleep(time.Until(at) + 1500*time.Millisecond) // past the default grace of 1s

				s2 := newStore(t, b, dsn) // a new process
				tab := cron.NewTable(handlers, cron.WithStore(s2))
				require.NoError(t, tab.Follow(ctx, s2.Definitions()))
				eventually(t, "the once task's final record", func() bool {
					r, err := s2.Last(ctx, name)
					return err == nil && r.Status != schedule.Running
				})
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
				assert.Equal(t, want, fates(t, s2, name))
			})
		})
	}
}

// TestRetryOnReplicas runs one slot on two replicas, whose job fails its
// first attempt: one replica claims the slot and runs both attempts; the
// pause between them is longer than the lease, which the job renews, so
// the other replica never takes the slot over; the store's record is the
// second attempt's, Succeeded. A takeover after a renewal or a Retry that
// came a lease after the call before it tells nothing: withLease tries
// again with a longer lease.
func TestRetryOnReplicas(t *testing.T) {
	t.Parallel() // real time, mostly waiting: beside the others of its kind
	eachBackend(t, func(t *testing.T, b backend) {
		withLease(t, 100*time.Millisecond, func(lease time.Duration) bool {
			dsn := b.dsn(t)
			stores := []*leaseClock{
				newLeaseClock(newStore(t, b, dsn, sqlstore.WithLease(lease))),
				newLeaseClock(newStore(t, b, dsn, sqlstore.WithLease(lease))),
			}
			due := time.Now().Add(lease / 2).Round(0)
			var mu sync.Mutex
			var attempts []string
			var jobs []*schedule.Job
			for i, s := range stores {
				node := fmt.Sprint("n", i)
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
			if time.Now().After(due) { // a Once job started after its slot runs nothing
				for _, j := range jobs {
					require.NoError(t, j.Stop(ctx))
				}
				t.Logf("the jobs started after their slot")
				return false
			}
			s := newStore(t, b, dsn)
			eventually(t, "the slot's final record", func() bool {
				r, err := s.Last(ctx, "r")
				return err == nil && r.Status != schedule.Running
			})
			time.Sleep(lease) // a takeover, if any, would come now
			for _, j := range jobs {
				require.NoError(t, j.Stop(ctx))
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range stores {
				if s.Late() {
					t.Logf("a call that stamped the lease came a lease or more after the one before it")
					return false
				}
			}
			r, err := s.Last(ctx, "r")
			require.NoError(t, err)
			assert.Equal(t, schedule.Succeeded, r.Status, "%+v", r)
			assert.Equal(t, 2, r.Attempt)
			require.Len(t, attempts, 2, "%v", attempts)
			assert.Equal(t, attempts[0][:2], attempts[1][:2], "both attempts on one replica: %v", attempts)
			assert.Equal(t, attempts[0][:2]+" attempt 1 Scheduled", attempts[0])
			assert.Equal(t, attempts[0][:2]+" attempt 2 Scheduled", attempts[1])
			return true
		})
	})
}

// TestRestartTogetherCatchesUpEverySlot stops a job under MisfireRunAll
// and OverlapSkip for a few slots, then starts it again on two Stores of
// one database at once, as two replicas restarted together: each slot
// missed runs once, on one of them. The replicas' catch-ups meet: one
// claims a slot while the other's run of the slot before is in flight.
// Such a claim waits for the job to be free, as the catch-up of one
// process runs its slots one after another; Skipped, as a new slot that
// finds a run in flight is, it left nearly every missed slot unrun, each
// replica skipping the slots whose claims found the other's run.
//
// No step is timed: the slots owed are reckoned from the last slot the
// first run recorded and from when the second Starts were called, and the
// test waits for a final record of each, however long that takes.
func TestRestartTogetherCatchesUpEverySlot(t *testing.T) {
	const every = 100 * time.Millisecond
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		name := "together"
		job := func(s *sqlstore.Store, node string) *schedule.Job {
			return schedule.NewJob(name, schedule.Every(every), func(context.Context, schedule.Run) error {
				time.Sleep(every / 4)
				return nil
			}, schedule.WithStore(s), schedule.WithNode(node), schedule.WithMisfire(schedule.MisfireRunAll),
				schedule.WithGrace(every/2))
		}
		first := newStore(t, b, dsn)
		j := job(first, "first")
		require.NoError(t, j.Start(ctx))
		eventually(t, "a first run", func() bool {
			r, err := first.Last(ctx, name)
			return err == nil && r.Status == schedule.Succeeded
		})
		require.NoError(t, j.Stop(ctx))
		last, err := first.Last(ctx, name)
		require.NoError(t, err)
		time.Sleep(10 * every)

		a, b2 := newStore(t, b, dsn), newStore(t, b, dsn)
		ja, jb := job(a, "a"), job(b2, "b")
		called := time.Now()
		var wg sync.WaitGroup
		for _, j := range []*schedule.Job{ja, jb} {
			wg.Go(func() { assert.NoError(t, j.Start(ctx)) })
		}
		wg.Wait()
		var owed []time.Time
		for d := last.Due.Add(every); d.Before(called.Add(-every)); d = d.Add(every) {
			owed = append(owed, d.UTC())
		}
		require.GreaterOrEqual(t, len(owed), 5)
		eventually(t, "a final record of each slot owed", func() bool {
			got := fates(t, a, name)
			for _, d := range owed {
				if f, ok := got[d]; !ok || strings.HasPrefix(f, "Running ") {
					return false
				}
			}
			return true
		})
		require.NoError(t, ja.Stop(ctx))
		require.NoError(t, jb.Stop(ctx))
		got := fates(t, a, name)
		for _, d := range owed {
			assert.Equal(t, "Succeeded CatchUp", got[d], "slot %v", d)
		}
	})
}
