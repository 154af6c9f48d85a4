package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// MaxCountSteps is the most ranges one CountRuns call counts.
const MaxCountSteps = 10_000

// countRunsSQL counts the records of every job by the range of slots of
// step ns from $1 that their Due falls in, up to $3, and by status (a
// Released record by its own), from the index {t}_due.
const countRunsSQL = `SELECT (due - $1) / $2 AS i, CASE WHEN released = 1 THEN 6 ELSE status END AS st, COUNT(*)
FROM {t} WHERE due >= $1 AND due < $3 GROUP BY 1, 2`

// CountRuns returns n counts of the records of every job, by status: the
// i-th those whose Due is in [from+i·step, from+(i+1)·step). A count of
// zero is absent. It reads the index of the records by due time, in one
// statement, so that the admin page's chart of the runs of the last 24
// hours costs one read whatever the number of jobs (admin.RunCounter). It
// returns an error if step is not positive or n is not in [1,
// MaxCountSteps], or the range reaches past the years 1678 to 2262.
func (s *Store) CountRuns(ctx context.Context, from time.Time, step time.Duration, n int) ([]map[schedule.Status]int, error) {
	s.mustBeMade()
	switch {
	case step <= 0:
		return nil, fmt.Errorf("sqlstore: CountRuns with a step of %v: want more than 0", step)
	case n < 1 || n > MaxCountSteps:
		return nil, fmt.Errorf("sqlstore: CountRuns of %d ranges: want 1 to %d", n, MaxCountSteps)
	}
	if step > time.Duration(math.MaxInt64)/time.Duration(n) {
		return nil, fmt.Errorf("sqlstore: CountRuns from %v, %d ranges of %v: past what a Due holds", from, n, step)
	}
	to := from.Add(step * time.Duration(n))
	if from.Year() < 1678 || to.Year() > 2261 {
		return nil, fmt.Errorf("sqlstore: CountRuns from %v, %d ranges of %v: past what a Due holds", from, n, step)
	}
	counts := make([]map[schedule.Status]int, n)
	err := s.retryOp(ctx, hookCount, 1, func() error {
		clear(counts)
		return s.query(ctx, s.countSQL, func(rows *sql.Rows) error {
			var i, st, c int64
			if err := rows.Scan(&i, &st, &c); err != nil {
				return err
			}
			if i < 0 || i >= int64(n) {
				return nil
			}
			if counts[i] == nil {
				counts[i] = map[schedule.Status]int{}
			}
			counts[i][schedule.Status(st)] += int(c)
			return nil
		}, from.UnixNano(), int64(step), to.UnixNano())
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: counting the runs from %v: %w", from, err)
	}
	return counts, nil
}
