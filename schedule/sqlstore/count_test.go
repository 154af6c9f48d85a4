package sqlstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// CountRuns counts the records of every job by hour and status, Running
// ones as such, those before from and from the end on left out, in one
// statement.
func TestCountRuns(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		var st statements
		s := newStore(t, b, b.dsn(t), sqlstore.WithStatementHook(st.hook))
		from := time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)
		write := func(job string, due time.Duration, status schedule.Status) {
			t.Helper()
			r := schedule.Record{Job: job, Due: from.Add(due), Status: schedule.Running, Node: "n", Attempt: 1, Start: from.Add(due)}
			require.NoError(t, s.Claim(ctx, r))
			if status != schedule.Running {
				r.Status, r.End = status, r.Start.Add(time.Second)
				require.NoError(t, s.Finish(ctx, r))
			}
		}
		write("a", -time.Minute, schedule.Succeeded) // before from
		write("a", 0, schedule.Succeeded)
		write("b", 10*time.Minute, schedule.Failed)
		write("c", 59*time.Minute, schedule.Succeeded)
		write("a", time.Hour, schedule.Failed)
		write("b", 2*time.Hour+time.Minute, schedule.Running)
		write("c", 3*time.Hour, schedule.Succeeded) // the end: left out
		st.take(t)
		counts, err := s.CountRuns(ctx, from, time.Hour, 3)
		require.NoError(t, err)
		assert.Equal(t, []map[schedule.Status]int{
			{schedule.Succeeded: 2, schedule.Failed: 1},
			{schedule.Failed: 1},
			{schedule.Running: 1},
		}, counts)
		assert.Equal(t, []string{"count 1"}, st.take(t), "one statement")

		for _, bad := range []struct {
			step time.Duration
			n    int
		}{{0, 3}, {time.Hour, 0}, {time.Hour, sqlstore.MaxCountSteps + 1}} {
			_, err := s.CountRuns(ctx, from, bad.step, bad.n)
			assert.Error(t, err, "%v × %d", bad.step, bad.n)
		}
		_, err = s.CountRuns(ctx, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), time.Hour, 1)
		assert.Error(t, err, "past the years a Due holds")
	})
}
