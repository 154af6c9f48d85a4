package sqlstore_test

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// readTime reads a readable time column: a time.Time on PostgreSQL,
// RFC 3339 text on SQLite.
func readTime(t *testing.T, v any) time.Time {
	t.Helper()
	switch v := v.(type) {
	case nil:
		return time.Time{}
	case time.Time:
		return v
	case string:
		tm, err := time.Parse("2006-01-02T15:04:05.000000Z", v)
		require.NoError(t, err, "a readable time: %q", v)
		return tm
	}
	t.Fatalf("a time column holds %T", v)
	return time.Time{}
}

// TestReadableView reads the run records through the view {t}_readable, as
// a person with psql or sqlite3 does: times, status and reason names, the
// duration.
func TestReadableView(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		tb := tableFor(t)
		s := newStore(t, b, dsn, sqlstore.WithHistory(100, 100))
		var wrote []schedule.Record
		for st := schedule.Running; st <= schedule.Missed; st++ {
			i := int(st)
			r := running("v", i, fmt.Sprint("node-", i))
			r.Reason = schedule.Reason(i % 5) // every reason, Backfill included
			r.Attempt = 1
			r.Start = slot(i).Add(1234567 * time.Nanosecond)
			if st == schedule.Running {
				require.NoError(t, s.Claim(ctx, r))
			} else {
				r.Status, r.End, r.Err = st, r.Start.Add(1500*time.Millisecond), "err "+st.String()
				require.NoError(t, s.Finish(ctx, r))
			}
			wrote = append(wrote, r)
		}
		// Values the API does not write: a status and reason this version
		// does not know, a time before 1970 and out of the microsecond.
		db := openDB(t, b.driver, dsn)
		_, err := db.Exec("INSERT INTO " + tb + " (job, due, reason, status, node, err, attempt) VALUES ('v', -1500, 7, 9, 'raw', '', 1)")
		require.NoError(t, err)

		rows, err := db.Query("SELECT job, due, status, reason, attempt, node, start_at, end_at, CAST(duration AS TEXT), err, lease_until FROM " +
			tb + "_readable ORDER BY due")
		require.NoError(t, err)
		defer rows.Close()
		type line struct {
			job, status, reason, node, err string
			attempt                        int
			due, start, end, lease         time.Time
			duration                       sql.NullString
		}
		var lines []line
		for rows.Next() {
			var l line
			var due, start, end, lease any
			require.NoError(t, rows.Scan(&l.job, &due, &l.status, &l.reason, &l.attempt, &l.node, &start, &end, &l.duration, &l.err, &lease))
			l.due, l.start, l.end, l.lease = readTime(t, due), readTime(t, start), readTime(t, end), readTime(t, lease)
			lines = append(lines, l)
		}
		require.NoError(t, rows.Err())
		require.Len(t, lines, len(wrote)+1)

		raw := lines[0]
		assert.Equal(t, schedule.Status(9).String(), raw.status)
		assert.Equal(t, schedule.Reason(7).String(), raw.reason)
		assert.True(t, raw.due.Equal(time.Unix(0, -2000)), "floored to the microsecond: %v", raw.due)
		assert.True(t, raw.start.IsZero())
		assert.False(t, raw.duration.Valid)

		for k, l := range lines[1:] {
			w := wrote[k]
			assert.Equal(t, "v", l.job)
			assert.Equal(t, w.Status.String(), l.status)
			assert.Equal(t, w.Reason.String(), l.reason)
			assert.Equal(t, 1, l.attempt)
			assert.Equal(t, w.Node, l.node)
			assert.Equal(t, w.Err, l.err)
			assert.True(t, l.due.Equal(w.Due), "due %v, want %v", l.due, w.Due)
			assert.True(t, l.start.Equal(w.Start.Truncate(time.Microsecond)), "start %v, want %v", l.start, w.Start)
			if w.Status == schedule.Running {
				assert.True(t, l.end.IsZero())
				assert.False(t, l.duration.Valid)
				assert.WithinDuration(t, time.Now().Add(s.Lease()), l.lease, time.Minute, "a running claim's lease")
				continue
			}
			assert.True(t, l.end.Equal(w.End.Truncate(time.Microsecond)), "end %v, want %v", l.end, w.End)
			assert.True(t, l.lease.IsZero(), "a lease is shown only while the claim runs")
			want := "1.500s"
			if b.dialect == sqlstore.PostgreSQL {
				want = "00:00:01.5"
			}
			assert.Equal(t, want, l.duration.String)
		}
	})
}

// TestReadableDefinitions reads a definition as a person does, from
// {t}_tasks.
func TestReadableDefinitions(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		s := newStore(t, b, dsn)
		full := fullTask("r")
		_, err := s.Definitions().Create(ctx, full)
		require.NoError(t, err)
		var (
			start, created   any
			timeout, backoff string
			attempts         int
			paused, once     bool
		)
		require.NoError(t, openDB(t, b.driver, dsn).QueryRow("SELECT start_at, created_at, timeout, retry_backoff, retry_attempts, paused, once FROM "+
			tableFor(t)+"_tasks WHERE name = 'r'").Scan(&start, &created, &timeout, &backoff, &attempts, &paused, &once))
		if b.dialect == sqlstore.SQLite {
			assert.Equal(t, "2030-01-02T02:04:05.123456Z", start)
		}
		assert.True(t, readTime(t, start).Equal(full.Start.Truncate(time.Microsecond)))
		assert.WithinDuration(t, time.Now(), readTime(t, created), time.Minute)
		assert.Equal(t, "1m30s", timeout)
		assert.Equal(t, "1.5s", backoff)
		assert.Equal(t, 3, attempts)
		assert.False(t, paused)
		assert.True(t, once)
	})
}
