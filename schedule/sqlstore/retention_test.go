package sqlstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// ages returns the ages of the records of job, newest first, in minutes
// before base, rounded down.
func ages(t *testing.T, s *sqlstore.Store, job string, base time.Time) []int {
	t.Helper()
	h, err := s.History(ctx, job, 1000)
	require.NoError(t, err)
	var a []int
	for _, r := range h {
		a = append(a, int(base.Sub(r.Due)/time.Minute))
	}
	return a
}

// TestRetention prunes with WithHistory(1, 0) and WithRetention(1h):
// every record of the last hour stays, older ones go down to the counts,
// and a job's last record stays however old; alone (Prune) and in batches
// (after Finishes).
func TestRetention(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t), sqlstore.WithHistory(1, 0), sqlstore.WithRetention(time.Hour))
		base := time.Now().Truncate(time.Minute)
		claim := func(job string, minutes int, st schedule.Status) schedule.Record {
			due := base.Add(-time.Duration(minutes) * time.Minute)
			r := schedule.Record{Job: job, Due: due, Reason: schedule.Scheduled, Status: st,
				Start: due, End: due.Add(time.Second), Node: "a"}
			if st == schedule.Running {
				r.End = time.Time{}
			}
			require.NoError(t, s.Claim(ctx, r))
			return r
		}

		// Succeeded records 3h, 2h and 61m old, then every 10 minutes of
		// the last hour: the old go, though the last hour's are more than
		// WithHistory keeps.
		for _, m := range []int{180, 120, 61, 59, 50, 40, 30, 20, 10} {
			claim("mixed", m, schedule.Succeeded)
		}
		// Only old records: the newest success (WithHistory) and the last.
		for _, c := range []struct {
			m  int
			st schedule.Status
		}{{200, schedule.Succeeded}, {190, schedule.Succeeded}, {180, schedule.Failed}, {170, schedule.Succeeded}, {160, schedule.Missed}} {
			claim("stale", c.m, c.st)
		}
		for _, job := range []string{"mixed", "stale"} {
			_, err := s.Prune(ctx, job)
			require.NoError(t, err)
		}
		assert.Equal(t, []int{10, 20, 30, 40, 50, 59}, ages(t, s, "mixed", base), "the last hour's records")
		assert.Equal(t, []int{160, 170}, ages(t, s, "stale", base), "the last record, and the newest success")
		require.ErrorIs(t, s.Claim(ctx, schedule.Record{Job: "mixed", Due: base.Add(-61 * time.Minute),
			Status: schedule.Running, Node: "late"}), schedule.ErrClaimed, "a slot pruned by age")

		// In batches: 16 Finishes of slots 5h old, then 16 of the last
		// hour; each 16th Finish prunes in the background.
		for _, m := range []int{300, 50} {
			for i := range 16 {
				r := claim("batch", m-i, schedule.Running)
				r.Status, r.End = schedule.Succeeded, r.Due.Add(time.Second)
				require.NoError(t, s.Finish(ctx, r))
			}
		}
		eventually(t, "the background prunes", func() bool { return len(ages(t, s, "batch", base)) <= 16 })
		assert.Equal(t, []int{35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50}, ages(t, s, "batch", base))
	})
}

// TestRetentionBound keeps, by age, only the newest records of each kind
// up to the bound (MaxRetained, lowered here to 5), alone and in batches.
func TestRetentionBound(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t), sqlstore.WithHistory(1, 0), sqlstore.WithRetention(time.Hour),
			sqlstore.WithMaxRetained(5))
		base := time.Now().Truncate(time.Minute)
		// 8 failures 40 to 33 minutes old, then 12 successes 20 to 9:
		// the newest 5 of each stay.
		write := func(job string, finish bool) {
			for i := range 20 {
				m, st := 40-i, schedule.Failed
				if i >= 8 {
					m, st = 28-i, schedule.Succeeded
				}
				due := base.Add(-time.Duration(m) * time.Minute)
				r := schedule.Record{Job: job, Due: due, Reason: schedule.Scheduled, Status: schedule.Running,
					Start: due, Node: "a"}
				if !finish {
					r.Status, r.End = st, due.Add(time.Second)
				}
				require.NoError(t, s.Claim(ctx, r))
				if finish {
					r.Status, r.End = st, due.Add(time.Second)
					require.NoError(t, s.Finish(ctx, r))
				}
			}
		}
		want := []int{9, 10, 11, 12, 13, 33, 34, 35, 36, 37}
		write("alone", false)
		_, err := s.Prune(ctx, "alone")
		require.NoError(t, err)
		assert.Equal(t, want, ages(t, s, "alone", base))

		write("batch", true) // 20 Finishes: one background prune, after the 16th
		eventually(t, "the background prune", func() bool { return len(ages(t, s, "batch", base)) < 20 })
		_, err = s.Prune(ctx, "batch") // and the last 4
		require.NoError(t, err)
		assert.Equal(t, want, ages(t, s, "batch", base))
	})
}
