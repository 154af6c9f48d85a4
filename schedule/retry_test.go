package schedule_test

import (
	"context"
	"errors"
	"fmt"
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

// failing returns a Func that fails its first fails calls, then succeeds,
// each after taking d; it counts its calls in n.
func failing(n *int, fails int, d time.Duration) schedule.Func {
	return func(ctx context.Context, r schedule.Run) error {
		*n++
		time.Sleep(d)
		if *n <= fails {
			return fmt.Errorf("attempt %d failed", *n)
		}
		return nil
	}
}

// A failed slot runs again after backoff, then after pauses that double up
// to an hour: the same slot, with the next Attempt each time, until its
// attempts are spent. Each attempt reaches the Observer.
func TestRetryPausesDouble(t *testing.T) {
	const m = time.Minute
	for _, c := range []struct {
		name     string
		attempts int
		backoff  time.Duration
		pauses   []time.Duration
	}{
		{"doubling up to an hour", 6, 20 * m, []time.Duration{20 * m, 40 * m, 60 * m, 60 * m, 60 * m}},
		{"a backoff over an hour", 2, 3 * time.Hour, []time.Duration{60 * m}},
		{"doubling past the range of a Duration", 25, time.Hour, slices.Repeat([]time.Duration{60 * m}, 24)},
		{"no backoff", 3, 0, []time.Duration{0, 0}},
		{"a negative backoff", 3, -time.Second, []time.Duration{0, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				var runs []schedule.Run
				var starts []time.Time
				j := schedule.NewJob("j", schedule.At(at(24*time.Hour)), func(ctx context.Context, r schedule.Run) error {
					runs, starts = append(runs, r), append(starts, time.Now())
					return errors.New("down")
				}, schedule.WithRetry(c.attempts, c.backoff), schedule.WithObserver(l.observe), schedule.WithNode("n"))
				start(t, j)
				time.Sleep(50 * time.Hour) // the retries of the slot at 24h end by 48h
				stop(t, j)
				require.Len(t, runs, c.attempts)
				var pauses []time.Duration
				for i := range runs {
					assert.Equal(t, schedule.Run{Job: "j", Due: at(24 * time.Hour), Reason: schedule.Scheduled, Attempt: i + 1}, runs[i])
					if i > 0 {
						pauses = append(pauses, starts[i].Sub(starts[i-1]))
					}
				}
				assert.Equal(t, c.pauses, pauses)
				recs := l.recs()
				require.Len(t, recs, c.attempts)
				for i, r := range recs {
					assert.Equal(t, schedule.Record{Job: "j", Due: at(24 * time.Hour), Reason: schedule.Scheduled,
						Status: schedule.Failed, Start: starts[i], End: starts[i], Node: "n", Err: "down", Attempt: i + 1}, r)
				}
			})
		})
	}
}

// Retries stop at the first attempt that succeeds; the store's record of
// the slot shows the attempt in progress, and then the last attempt's
// outcome, which is also the last Record the Observer gets.
func TestRetryUntilItSucceeds(t *testing.T) {
	for _, fails := range []int{1, 2} {
		t.Run(fmt.Sprint(fails, " failures"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := schedule.NewMemoryStore(10)
				var l journal
				var inProgress []schedule.Record
				n := 0
				f := failing(&n, fails, time.Second)
				j := schedule.NewJob("j", schedule.Every(time.Hour), func(ctx context.Context, r schedule.Run) error {
					rec, err := mem.Last(ctx, "j")
					require.NoError(t, err)
					inProgress = append(inProgress, rec)
					return f(ctx, r)
				}, schedule.WithRetry(5, time.Minute), schedule.WithStore(mem), schedule.WithNode("n"),
					schedule.WithObserver(l.observe))
				start(t, j)
				time.Sleep(90 * time.Minute)
				stop(t, j)
				rec := func(start time.Duration, status schedule.Status, err string, attempt int) schedule.Record {
					r := schedule.Record{Job: "j", Due: at(time.Hour), Reason: schedule.Scheduled, Status: status,
						Start: at(start), Node: "n", Err: err, Attempt: attempt}
					if status != schedule.Running {
						r.End = at(start + time.Second)
					}
					return r
				}
				starts := []time.Duration{time.Hour, time.Hour + time.Minute + time.Second, time.Hour + 3*time.Minute + 2*time.Second}
				var want, running []schedule.Record
				for i := range fails + 1 {
					status, err := schedule.Failed, fmt.Sprintf("attempt %d failed", i+1)
					if i == fails {
						status, err = schedule.Succeeded, ""
					}
					want = append(want, rec(starts[i], status, err, i+1))
					running = append(running, rec(starts[i], schedule.Running, "", i+1))
				}
				assert.Equal(t, want, l.recs())
				assert.Equal(t, running, inProgress)
				h, err := mem.History(context.Background(), "j", 10)
				require.NoError(t, err)
				assert.Equal(t, want[fails:], h, "the store keeps the last attempt's outcome")
			})
		})
	}
}

// A retry waiting for its pause ends at Stop, which returns at once: the
// slot keeps its first attempt's outcome, and nothing more runs.
func TestStopDuringARetryPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := schedule.NewMemoryStore(10)
		var l journal
		runs := 0
		j := schedule.NewJob("j", schedule.Every(time.Hour), func(context.Context, schedule.Run) error {
			runs++
			return errors.New("down")
		}, schedule.WithRetry(5, 10*time.Minute), schedule.WithStore(mem), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(time.Hour + time.Minute) // the retry waits until 1h10m
		before := time.Now()
		stop(t, j)
		assert.Zero(t, time.Since(before), "Stop waited for the pause")
		time.Sleep(time.Hour)
		assert.Equal(t, 1, runs)
		assert.Equal(t, []string{"1h0m0s Failed Scheduled 1h0m0s-1h0m0s"}, l.summary())
		last, err := mem.Last(context.Background(), "j")
		require.NoError(t, err)
		assert.Equal(t, l.recs()[0], last, "the store keeps the failed attempt's outcome")
	})
}

// A retry waiting for its pause ends at Pause: the slot keeps its first
// attempt's outcome, and the job's next slot after Resume runs as any.
func TestPauseDuringARetryPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := schedule.NewMemoryStore(10)
		var l journal
		var runs []schedule.Run
		j := schedule.NewJob("j", schedule.Every(time.Hour), func(_ context.Context, r schedule.Run) error {
			runs = append(runs, r)
			return errors.New("down")
		}, schedule.WithRetry(2, 10*time.Minute), schedule.WithStore(mem), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(time.Hour + time.Minute)
		j.Pause()
		time.Sleep(time.Second) // the wait, until 1h10m, ended at the Pause
		last, err := mem.Last(context.Background(), "j")
		require.NoError(t, err)
		assert.Equal(t, schedule.Failed, last.Status)
		assert.Equal(t, 1, last.Attempt)
		time.Sleep(time.Hour) // 2h1m1s
		j.Resume()
		time.Sleep(time.Hour) // 3h1m1s: the slot at 3h failed, its retry waits
		stop(t, j)
		assert.Equal(t, []schedule.Run{
			{Job: "j", Due: at(time.Hour), Reason: schedule.Scheduled, Attempt: 1},
			{Job: "j", Due: at(3 * time.Hour), Reason: schedule.Scheduled, Attempt: 1},
		}, runs)
		assert.Equal(t, []string{
			"1h0m0s Failed Scheduled 1h0m0s-1h0m0s",
			"3h0m0s Failed Scheduled 3h0m0s-3h0m0s",
		}, l.summary())
	})
}

// A retry waiting for its pause is a run in flight: under OverlapSkip a
// slot that falls due meanwhile is Skipped; under OverlapReplace it ends
// the wait, and the slot before keeps its failed attempt's outcome.
func TestRetryPauseUnderTheOverlapPolicy(t *testing.T) {
	for _, c := range []struct {
		overlap schedule.Overlap
		want    []string
	}{
		{schedule.OverlapSkip, []string{
			"10s Failed Scheduled 10s-10s",
			"20s Skipped Scheduled",
			"10s Failed Scheduled 25s-25s",
			"30s Succeeded Scheduled 30s-30s",
		}},
		{schedule.OverlapBufferOne, []string{
			"10s Failed Scheduled 10s-10s",
			"10s Failed Scheduled 25s-25s",
			"20s Succeeded Scheduled 25s-25s",
			"30s Succeeded Scheduled 30s-30s",
		}},
		{schedule.OverlapReplace, []string{
			"10s Failed Scheduled 10s-10s",
			"20s Succeeded Scheduled 20s-20s",
			"30s Succeeded Scheduled 30s-30s",
		}},
	} {
		t.Run(c.overlap.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := schedule.NewMemoryStore(10)
				var l journal
				j := schedule.NewJob("j", schedule.Every(10*time.Second), func(_ context.Context, r schedule.Run) error {
					if r.Due.Equal(at(10 * time.Second)) {
						return errors.New("down")
					}
					return nil
				}, schedule.WithRetry(2, 15*time.Second), schedule.WithOverlap(c.overlap), schedule.WithStore(mem),
					schedule.WithObserver(l.observe))
				start(t, j)
				time.Sleep(35 * time.Second)
				stop(t, j)
				assert.Equal(t, c.want, l.summary())
				h, err := mem.History(context.Background(), "j", 10)
				require.NoError(t, err)
				var first schedule.Record
				for _, r := range h {
					if r.Due.Equal(at(10 * time.Second)) {
						first = r
					}
				}
				assert.Equal(t, schedule.Failed, first.Status)
				if c.overlap == schedule.OverlapReplace {
					assert.Equal(t, 1, first.Attempt, "replaced during the pause")
				} else {
					assert.Equal(t, 2, first.Attempt)
				}
			})
		})
	}
}

// A run that panics, or times out, is retried; one whose context was
// cancelled is not.
func TestRetryPanicsAndTimeoutsNotCancels(t *testing.T) {
	t.Run("panic and timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var l journal
			n := 0
			j := schedule.NewJob("j", schedule.Every(time.Hour), func(ctx context.Context, r schedule.Run) error {
				n++
				switch n {
				case 1:
					panic("boom")
				case 2:
					<-ctx.Done()
					return ctx.Err()
				}
				return nil
			}, schedule.WithRetry(3, time.Second), schedule.WithTimeout(5*time.Second), schedule.WithObserver(l.observe))
			start(t, j)
			time.Sleep(90 * time.Minute)
			stop(t, j)
			var got []string
			for _, r := range l.recs() {
				got = append(got, fmt.Sprintf("%d %s %s %s", r.Attempt, r.Status, since(r.Start), r.Err))
			}
			assert.Equal(t, []string{
				"1 Failed 1h0m0s schedule: panic: boom",
				"2 Failed 1h0m1s schedule: run timed out after 5s: context deadline exceeded",
				"3 Succeeded 1h0m8s ",
			}, got)
		})
	})
	t.Run("stopped", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var l journal
			runs := 0
			j := schedule.NewJob("j", schedule.Every(time.Hour), func(ctx context.Context, r schedule.Run) error {
				runs++
				<-ctx.Done()
				return errors.New("gave up")
			}, schedule.WithRetry(3, 0), schedule.WithObserver(l.observe))
			start(t, j)
			time.Sleep(time.Hour + time.Minute)
			stop(t, j)
			assert.Equal(t, 1, runs)
			assert.Equal(t, []string{"1h0m0s Canceled Scheduled 1h0m0s-1h1m0s"}, l.summary())
		})
	})
}

// attempts below 2 mean no retry.
func TestRetryOnceIsNoRetry(t *testing.T) {
	for _, attempts := range []int{1, 0, -1} {
		t.Run(fmt.Sprint(attempts), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				runs := 0
				j := schedule.NewJob("j", schedule.Every(time.Hour), func(context.Context, schedule.Run) error {
					runs++
					return errors.New("down")
				}, schedule.WithRetry(attempts, time.Second), schedule.WithObserver(l.observe))
				start(t, j)
				time.Sleep(90 * time.Minute)
				stop(t, j)
				assert.Equal(t, 1, runs)
				assert.Equal(t, []string{"1h0m0s Failed Scheduled 1h0m0s-1h0m0s"}, l.summary())
			})
		})
	}
}

// A failed catch-up run is retried as a CatchUp, under OverlapAllow as
// under the other policies.
func TestRetryCatchUpAndParallelRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(10)
		succeeded(t, store, t0)
		var l journal
		slots := schedule.At(at(10*time.Second), at(20*time.Second), at(30*time.Second))
		j := schedule.NewJob("j", slots, func(_ context.Context, r schedule.Run) error {
			time.Sleep(15 * time.Second)
			if r.Attempt == 1 {
				return errors.New("down")
			}
			return nil
		}, schedule.WithRetry(2, time.Second), schedule.WithOverlap(schedule.OverlapAllow), schedule.WithStore(store),
			schedule.WithObserver(l.observe))
		time.Sleep(25 * time.Second)
		start(t, j) // 20s is caught up
		time.Sleep(time.Minute)
		stop(t, j)
		assert.Equal(t, []string{
			"10s Missed CatchUp",
			"20s Failed CatchUp 25s-40s",
			"30s Failed Scheduled 30s-45s",
			"20s Succeeded CatchUp 41s-56s",
			"30s Succeeded Scheduled 46s-1m1s",
		}, l.summary())
	})
}

// retryLog is a SharedStore in memory that logs the claims, finishes and
// retries it gets, and refuses each Retry with refuse, if set.
type retryLog struct {
	*schedule.MemoryStore
	mu     sync.Mutex
	calls  []string
	refuse error
}

func (s *retryLog) log(call string, r schedule.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	line := fmt.Sprintf("%s %d %s %s", call, r.Attempt, r.Status, since(r.Start))
	if !r.End.IsZero() {
		line += "-" + since(r.End)
	}
	if r.Err != "" {
		line += " " + r.Err
	}
	s.calls = append(s.calls, line)
}

func (s *retryLog) Claim(ctx context.Context, r schedule.Record) error {
	s.log("Claim", r)
	return s.MemoryStore.Claim(ctx, r)
}

func (s *retryLog) ClaimRun(ctx context.Context, r schedule.Record, c schedule.Concurrency) (time.Time, error) {
	s.log("Claim", r)
	return s.MemoryStore.ClaimRun(ctx, r, c)
}

func (s *retryLog) Finish(ctx context.Context, r schedule.Record) error {
	s.log("Finish", r)
	return s.MemoryStore.Finish(ctx, r)
}

func (s *retryLog) Retry(ctx context.Context, r schedule.Record) error {
	s.log("Retry", r)
	if s.refuse != nil {
		return s.refuse
	}
	return s.MemoryStore.Retry(ctx, r)
}

// A SharedStore records each failed attempt and claims the next in one
// call, when the pause is over; a Retry it refuses ends the retries, and
// the slot, no longer the job's, is not finished; a Retry that fails
// otherwise ends them too, and the slot keeps its failed attempt. A Store
// that is not a SharedStore sees the first claim and the last attempt.
func TestRetryStoreSeesEachAttempt(t *testing.T) {
	for _, c := range []struct {
		name   string
		retry  bool // the job's store is a SharedStore
		refuse error
		runs   int
		calls  []string
	}{
		{"SharedStore", true, nil, 3, []string{
			"Claim 1 Running 1h0m0s",
			"Retry 1 Failed 1h0m0s-1h0m1s attempt 1 failed",
			"Retry 2 Failed 1h1m1s-1h1m2s attempt 2 failed",
			"Finish 3 Succeeded 1h3m2s-1h3m3s",
		}},
		{"Retry refused", true, schedule.ErrLeaseLost, 1, []string{
			"Claim 1 Running 1h0m0s",
			"Retry 1 Failed 1h0m0s-1h0m1s attempt 1 failed",
		}},
		{"Retry failed", true, errDown, 1, []string{
			"Claim 1 Running 1h0m0s",
			"Retry 1 Failed 1h0m0s-1h0m1s attempt 1 failed",
			"Finish 1 Failed 1h0m0s-1h0m1s attempt 1 failed: schedule: retry: connection refused",
		}},
		{"Store", false, nil, 3, []string{
			"Claim 1 Running 1h0m0s",
			"Finish 3 Succeeded 1h3m2s-1h3m3s",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := &retryLog{MemoryStore: schedule.NewMemoryStore(10), refuse: c.refuse}
				var store schedule.Store = log
				if !c.retry {
					store = struct{ schedule.Store }{log}
				}
				var l journal
				n := 0
				j := schedule.NewJob("j", schedule.Every(time.Hour), failing(&n, 2, time.Second),
					schedule.WithRetry(3, time.Minute), schedule.WithStore(store), schedule.WithObserver(l.observe))
				start(t, j)
				time.Sleep(90 * time.Minute)
				stop(t, j)
				assert.Equal(t, c.runs, n)
				assert.Equal(t, c.calls, log.calls)
				recs := l.recs()
				require.Len(t, recs, c.runs, "each attempt reaches the Observer")
				for i, r := range recs {
					assert.Equal(t, i+1, r.Attempt)
				}
				if c.refuse == nil {
					last, err := log.MemoryStore.Last(context.Background(), "j")
					require.NoError(t, err)
					assert.Equal(t, recs[len(recs)-1].Attempt, last.Attempt)
					assert.Equal(t, recs[len(recs)-1].Start, last.Start)
				}
			})
		})
	}
}

// retryLeaseStore is a leaseStore whose Retry takes the
// lease of the next attempt, and Renew refuses any attempt but the one
// that holds the lease. It logs each Renew. Its Retry answers slow after
// it claimed the next attempt, if slow is set.
type retryLeaseStore struct {
	*leaseStore
	renews []renewed
	slow   time.Duration
}

type renewed struct {
	at      time.Duration // since t0
	attempt int
}

func (s *retryLeaseStore) Renew(ctx context.Context, r schedule.Record) error {
	s.mu.Lock()
	s.renews = append(s.renews, renewed{time.Since(t0), r.Attempt})
	l := s.leases[r.Due]
	s.mu.Unlock()
	if l.rec.Attempt != r.Attempt {
		return schedule.ErrLeaseLost
	}
	return s.leaseStore.Renew(ctx, r)
}

func (s *retryLeaseStore) Retry(ctx context.Context, r schedule.Record) error {
	s.mu.Lock()
	l := s.leases[r.Due]
	if l.node != r.Node || l.rec.Attempt != r.Attempt || time.Now().After(l.until) {
		s.mu.Unlock()
		return schedule.ErrLeaseLost
	}
	if err := s.MemoryStore.Retry(ctx, r); err != nil {
		s.mu.Unlock()
		return err
	}
	l.rec.Attempt++
	l.until = time.Now().Add(s.lease)
	s.leases[r.Due] = l
	s.mu.Unlock()
	time.Sleep(s.slow)
	return nil
}

// The lease of a slot is renewed through the retries' pauses: each Renew
// names the attempt that holds the lease, the one Retry claimed.
func TestRetryRenewsTheLease(t *testing.T) {
	for _, retry := range []bool{true} {
		t.Run(fmt.Sprint("SharedStore=", retry), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &retryLeaseStore{leaseStore: newLeaseStore(9 * time.Second)}
				var s schedule.Store = store
				var l journal
				n := 0
				j := schedule.NewJob("j", schedule.Every(time.Hour), failing(&n, 2, 5*time.Second),
					schedule.WithRetry(3, time.Minute), schedule.WithStore(s), schedule.WithNode("n"),
					schedule.WithObserver(l.observe))
				start(t, j)
				time.Sleep(90 * time.Minute)
				stop(t, j)
				// Attempts at 1h, 1h1m5s and 1h3m10s, of 5s each.
				assert.Equal(t, []string{
					"1h0m0s Failed Scheduled 1h0m0s-1h0m5s",
					"1h0m0s Failed Scheduled 1h1m5s-1h1m10s",
					"1h0m0s Succeeded Scheduled 1h3m10s-1h3m15s",
				}, l.summary())
				store.mu.Lock()
				renews := store.renews
				store.mu.Unlock()
				var inPause1, inPause2 bool
				for _, r := range renews {
					at, attempt := r.at, r.attempt
					want := 1
					switch {
					case !retry:
					case at > time.Hour+3*time.Minute+10*time.Second:
						want = 3
					case at > time.Hour+time.Minute+5*time.Second:
						want = 2
					}
					assert.Equal(t, want, attempt, "renewed at %v", at)
					inPause1 = inPause1 || at > time.Hour+5*time.Second && at < time.Hour+time.Minute+5*time.Second
					inPause2 = inPause2 || at > time.Hour+time.Minute+10*time.Second && at < time.Hour+3*time.Minute+10*time.Second
				}
				assert.True(t, inPause1 && inPause2, "renewed during the pauses: %v", renews)
				h, err := store.History(context.Background(), "j", 10)
				require.NoError(t, err)
				require.Len(t, h, 1)
				assert.Equal(t, l.recs()[2], h[0])
			})
		})
	}
}

// A Renew of the failed attempt that the store refuses while a Retry
// is claiming the next attempt (it has, and is slow to answer) does not
// make the run lose its lease.
func TestRetrySlowToAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &retryLeaseStore{leaseStore: newLeaseStore(9 * time.Second), slow: 5 * time.Second}
		var l journal
		n := 0
		j := schedule.NewJob("j", schedule.Every(time.Hour), failing(&n, 1, 5*time.Second),
			schedule.WithRetry(2, 10*time.Second), schedule.WithStore(store), schedule.WithNode("n"),
			schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(90 * time.Minute)
		stop(t, j)
		// The Retry at 1h15s answers at 1h20s; a Renew at 1h18s is refused,
		// then, once it has answered, renewals name the second attempt.
		assert.Equal(t, []string{
			"1h0m0s Failed Scheduled 1h0m0s-1h0m5s",
			"1h0m0s Succeeded Scheduled 1h0m15s-1h0m25s", // Start: when the Retry was sent
		}, l.summary())
		store.mu.Lock()
		defer store.mu.Unlock()
		assert.Contains(t, store.renews, renewed{time.Hour + 18*time.Second, 1})
		assert.Contains(t, store.renews, renewed{time.Hour + 24*time.Second, 2})
	})
}

// A run whose lease is lost is not retried, and neither is one whose
// lease is lost during the pause: the wait ends then, and the job is free.
func TestRetryLostLease(t *testing.T) {
	for _, during := range []string{"run", "pause"} {
		t.Run(during, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &retryLeaseStore{leaseStore: newLeaseStore(9 * time.Second)}
				var l journal
				runs := 0
				j := schedule.NewJob("j", schedule.Every(time.Hour), func(ctx context.Context, r schedule.Run) error {
					if r.Reason == schedule.Manual {
						return nil
					}
					runs++
					if during == "run" {
						<-ctx.Done()
					}
					return errors.New("down")
				}, schedule.WithRetry(3, time.Hour), schedule.WithStore(store), schedule.WithNode("n"),
					schedule.WithObserver(l.observe))
				start(t, j)
				time.Sleep(time.Hour + time.Second)
				store.mu.Lock() // another node takes the slot, for good
				claim := store.leases[at(time.Hour)]
				store.leases[at(time.Hour)] = lease{node: "thief", until: time.Now().Add(24 * time.Hour), rec: claim.rec}
				store.mu.Unlock()
				time.Sleep(9 * time.Second) // the renewal at 1h3s found the lease lost
				store.mu.Lock()             // the thief's run ends: the job is free on every node
				delete(store.leases, at(time.Hour))
				store.mu.Unlock()
				j.RunNow()
				time.Sleep(30 * time.Minute)
				stop(t, j)
				assert.Equal(t, 1, runs)
				want := "1h0m0s Failed Scheduled 1h0m0s-1h0m0s"
				if during == "run" {
					want = "1h0m0s Canceled Scheduled 1h0m0s-1h0m3s"
				}
				assert.Equal(t, []string{want, "1h0m10s Succeeded Manual 1h0m10s-1h0m10s"}, l.summary())
			})
		})
	}
}

// A Func that calls RunNow or Stop from a failing attempt: the RunNow is
// Skipped while the slot's attempts go on (OverlapSkip), or replaces the
// run, which is not retried (OverlapReplace); a Stop cancels the run,
// which is not retried.
func TestRetryHostileFunc(t *testing.T) {
	for _, c := range []struct {
		name    string
		overlap schedule.Overlap
		call    func(ctx context.Context, j *schedule.Job)
		want    []string
	}{
		{"RunNow under OverlapSkip", schedule.OverlapSkip, func(_ context.Context, j *schedule.Job) { j.RunNow() }, []string{
			"1h0m0.000000001s Skipped Manual", "1h0m0s Failed Scheduled 1h0m0s-1h0m0s",
			"1h0m1s Skipped Manual", "1h0m0s Failed Scheduled 1h0m1s-1h0m1s",
			"1h0m3s Skipped Manual", "1h0m0s Failed Scheduled 1h0m3s-1h0m3s",
		}},
		{"RunNow under OverlapReplace", schedule.OverlapReplace, func(_ context.Context, j *schedule.Job) { j.RunNow() }, []string{
			"1h0m0s Canceled Scheduled 1h0m0s-1h0m0s",
			"1h0m0.000000001s Succeeded Manual 1h0m0s-1h0m0s",
		}},
		{"Stop", schedule.OverlapSkip, func(ctx context.Context, j *schedule.Job) { _ = j.Stop(ctx) }, []string{
			"1h0m0s Canceled Scheduled 1h0m0s-1h0m0s",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				var j *schedule.Job
				j = schedule.NewJob("j", schedule.Every(time.Hour), func(ctx context.Context, r schedule.Run) error {
					if r.Reason == schedule.Manual {
						return nil
					}
					c.call(ctx, j)
					return errors.New("down")
				}, schedule.WithRetry(3, time.Second), schedule.WithOverlap(c.overlap), schedule.WithObserver(l.observe))
				start(t, j)
				time.Sleep(90 * time.Minute)
				stop(t, j)
				assert.Equal(t, c.want, l.summary())
			})
		})
	}
}

// A Func that always fails, retried without a pause up to a billion
// times, stops at Stop, called from outside or from the Func: Stop
// returns, and no attempt follows.
func TestStopEndsEndlessRetries(t *testing.T) {
	for _, from := range []string{"outside", "Func"} {
		t.Run(from, func(t *testing.T) {
			var runs, last, seen, lastSeen atomic.Int64
			busy := make(chan struct{})
			var j *schedule.Job
			j = schedule.NewJob("j", schedule.Every(time.Hour), func(ctx context.Context, r schedule.Run) error {
				last.Store(int64(r.Attempt))
				if runs.Add(1) == 1000 {
					if from == "Func" {
						_ = j.Stop(ctx)
					}
					close(busy)
				}
				return errors.New("down")
			}, schedule.WithRetry(1<<30, 0), schedule.WithObserver(func(r schedule.Record) {
				seen.Add(1)
				lastSeen.Store(int64(r.Attempt))
			}))
			start(t, j)
			j.RunNow()
			<-busy
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			require.NoError(t, j.Stop(ctx))
			n := runs.Load()
			assert.GreaterOrEqual(t, n, int64(1000))
			assert.Equal(t, n, last.Load(), "each run is the next attempt")
			// Each attempt reaches the Observer, in turn; so does one that
			// Stop cancelled after its claim, before its Func was called.
			assert.Equal(t, lastSeen.Load(), seen.Load(), "each attempt reaches the Observer once")
			assert.Contains(t, []int64{n, n + 1}, seen.Load())
			if from == "Func" {
				assert.EqualValues(t, 1000, n, "no attempt after the Stop")
			}
			j.RunNow() // does nothing after Stop
			assert.Equal(t, n, runs.Load())
		})
	}
}
