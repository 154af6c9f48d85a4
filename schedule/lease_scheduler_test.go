package schedule_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/wheel"
)

// inChild runs t's scenario in a child process, and fails t if the child
// crashed: a panic on a goroutine of the job's cannot be recovered by a
// test.
func inChild(t *testing.T, scenario func(t *testing.T)) {
	t.Helper()
	if os.Getenv("SCHEDULE_TEST_CHILD") == t.Name() {
		scenario(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SCHEDULE_TEST_CHILD="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		if len(out) > 3000 {
			out = out[:3000]
		}
		t.Fatalf("the job crashed its process: %v\n%s", err, out)
	}
}

// A run on a LeaseStore that starts after its job's Scheduler stopped
// arming timers (a wheel.Wheel stopped first, during a shutdown) crashes
// nothing: its lease is renewed on the runtime's timers.
func TestLeaseRunOnAStoppedScheduler(t *testing.T) {
	inChild(t, func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := wheel.New()
			var l journal
			j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(time.Second),
				schedule.WithStore(newLeaseStore(9*time.Second)), schedule.WithScheduler(w), schedule.WithObserver(l.observe))
			start(t, j)
			time.Sleep(time.Second)
			w.Stop() // shutting down: the wheel first
			j.RunNow()
			time.Sleep(5 * time.Second)
			_ = j.Stop(context.Background())
		})
	})
}

// A renewal that answers after the job's Scheduler stopped arming timers
// crashes nothing, and the lease is renewed on.
func TestLeaseRenewedAfterTheSchedulerStopped(t *testing.T) {
	inChild(t, func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := wheel.New()
			var l journal
			store := &slowRenewStore{leaseStore: newLeaseStore(9 * time.Second), slow: 2 * time.Second}
			j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(10*time.Second),
				schedule.WithStore(store), schedule.WithScheduler(w), schedule.WithObserver(l.observe), schedule.WithNode("n"))
			start(t, j)
			time.Sleep(64 * time.Second) // the run of 1m0s is in flight; its Renew of 1m3s answers at 1m5s
			w.Stop()                     // shutting down: the wheel first
			time.Sleep(20 * time.Second)
			_ = j.Stop(context.Background())
		})
	})
}

// slowRenewStore is a leaseStore whose Renew takes slow to answer.
type slowRenewStore struct {
	*leaseStore
	slow time.Duration
}

func (s *slowRenewStore) Renew(ctx context.Context, r schedule.Record) error {
	time.Sleep(s.slow)
	return s.leaseStore.Renew(ctx, r)
}

// A lease that cannot be renewed is given up on time after the job's
// Scheduler stopped arming timers: the run is cancelled at the deadline,
// not minutes later when the job stops, while another node may take its
// slot over.
func TestLeaseGivenUpAfterTheSchedulerStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		w := wheel.New()
		store := newLeaseStore(9 * time.Second)
		store.renewDown = true
		var cancelled time.Duration
		var cause error
		work := l.work(5 * time.Minute)
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(ctx context.Context, r schedule.Run) error {
			err := work(ctx, r)
			if cause == nil { // the first run; the job then takes its claim over, and gives it up again
				cancelled, cause = time.Since(t0), context.Cause(ctx)
			}
			return err
		}, schedule.WithStore(store), schedule.WithScheduler(w), schedule.WithObserver(l.observe), schedule.WithNode("n"))
		start(t, j)
		time.Sleep(61 * time.Second)
		w.Stop() // the run of 1m0s holds a lease until 1m9s at most
		time.Sleep(3 * time.Minute)
		_ = j.Stop(context.Background())
		assert.LessOrEqual(t, cancelled, 70*time.Second, "the run was given up at %v (%v)", cancelled, cause)
		assert.ErrorIs(t, cause, schedule.ErrLeaseNotRenewed)
	})
}
