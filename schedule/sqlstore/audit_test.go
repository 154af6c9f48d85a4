package sqlstore_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// Two Stores on one database keep one audit log: every entry once, in
// the order kept, read back whole (text cut as Clip cuts it), by name or
// all, page by page.
func TestAuditLog(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		a, c := newStore(t, b, dsn).Definitions(), newStore(t, b, dsn).Definitions()
		es, err := a.AuditLog(ctx, cron.AuditQuery{})
		require.NoError(t, err)
		assert.Empty(t, es)

		at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
		var wg sync.WaitGroup
		for i, d := range []*sqlstore.Definitions{a, c} {
			wg.Go(func() {
				for j := range 20 {
					name := "report"
					if j%2 == 1 {
						name = "other"
					}
					assert.NoError(t, d.Audit(ctx, cron.AuditEntry{At: at.Add(time.Duration(i*100+j) * time.Second),
						Actor: "alice", Action: "pause", Kind: "task", Name: name, Detail: "maintenance"}))
				}
			})
		}
		wg.Wait()
		long := strings.Repeat("é", cron.MaxAuditDetail)
		require.NoError(t, a.Audit(ctx, cron.AuditEntry{Actor: "<b>bob</b>", Action: "edit", Kind: "task", Name: "report", Detail: long}))

		all, err := c.AuditLog(ctx, cron.AuditQuery{Limit: 1000})
		require.NoError(t, err)
		require.Len(t, all, 41)
		for i := 1; i < len(all); i++ {
			assert.Less(t, all[i].ID, all[i-1].ID, "newest first")
		}
		newest := all[0]
		assert.Equal(t, "<b>bob</b>", newest.Actor)
		assert.LessOrEqual(t, len(newest.Detail), cron.MaxAuditDetail)
		assert.True(t, strings.HasSuffix(newest.Detail, "…"))
		assert.WithinDuration(t, time.Now(), newest.At, time.Minute, "At set at the call")
		assert.Equal(t, time.UTC, newest.At.Location())

		reports, err := a.AuditLog(ctx, cron.AuditQuery{Name: "report", Limit: 5})
		require.NoError(t, err)
		require.Len(t, reports, 5)
		assert.Equal(t, newest.ID, reports[0].ID)
		var seen []int64
		for q := (cron.AuditQuery{Name: "report", Limit: 7}); ; {
			page, err := a.AuditLog(ctx, q)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			for _, e := range page {
				assert.Equal(t, "report", e.Name)
				seen = append(seen, e.ID)
			}
			q.Before = page[len(page)-1].ID
		}
		assert.Len(t, seen, 21, "20 pauses and the edit, each once")
		none, err := a.AuditLog(ctx, cron.AuditQuery{Name: "report", Kind: "calendar"})
		require.NoError(t, err)
		assert.Empty(t, none, "no calendar of the name")
		tasks, err := a.AuditLog(ctx, cron.AuditQuery{Kind: "task", Limit: 1000})
		require.NoError(t, err)
		assert.Len(t, tasks, 41, "every entry is a task's")
		first := all[len(all)-1]
		assert.Equal(t, "alice", first.Actor)
		assert.Contains(t, []time.Time{at, at.Add(100 * time.Second)}, first.At, "to the nanosecond, in UTC")
	})
}

// The audit log keeps the newest MaxAudit entries: the entry whose id is
// a thousandth deletes those more than MaxAudit ids older. A table of
// version 9 migrates to an empty log, which Drop drops.
func TestAuditLogPruned(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		tb := tableFor(t)
		db := openDB(t, b.driver, dsn)
		_, err := sqlstore.NewAtVersion(ctx, db, b.dialect, 9, sqlstore.WithTable(tb))
		require.NoError(t, err)
		defs := newStore(t, b, dsn).Definitions()
		e := cron.AuditEntry{Actor: "alice", Action: "run", Kind: "job", Name: "j"}
		for range 3 {
			require.NoError(t, defs.Audit(ctx, e)) // ids 1 to 3
		}
		// The next id is 200,999, then 201,000: as if 200,995 more had been kept.
		if b.dialect == sqlstore.PostgreSQL {
			_, err = db.Exec(`SELECT setval('` + tb + `_audit_id_seq', 200998)`)
		} else {
			_, err = db.Exec(`UPDATE sqlite_sequence SET seq = 200998 WHERE name = '` + tb + `_audit'`)
		}
		require.NoError(t, err)
		require.NoError(t, defs.Audit(ctx, e))
		es, err := defs.AuditLog(ctx, cron.AuditQuery{})
		require.NoError(t, err)
		assert.Len(t, es, 4, "200,999 is not a thousandth: nothing pruned")
		require.NoError(t, defs.Audit(ctx, e))
		es, err = defs.AuditLog(ctx, cron.AuditQuery{})
		require.NoError(t, err)
		require.Len(t, es, 2, "201,000 prunes up to 101,000")
		assert.Equal(t, []int64{201000, 200999}, []int64{es[0].ID, es[1].ID})

		require.NoError(t, sqlstore.Drop(ctx, db, b.dialect, tb))
		var n int
		assert.Error(t, db.QueryRow(`SELECT COUNT(*) FROM `+tb+`_audit`).Scan(&n), "Drop drops the audit log")
	})
}

// AuditMany keeps many entries in their order, a statement for each
// thousand, and prunes as Audit does when their ids pass a thousandth.
func TestAuditMany(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		defs := newStore(t, b, b.dsn(t)).Definitions()
		es := make([]cron.AuditEntry, 2500)
		for i := range es {
			es[i] = cron.AuditEntry{Actor: "ana", Action: "create", Kind: "task", Name: fmt.Sprintf("t%04d", i), Detail: "from tasks.json"}
		}
		es[7].Actor = "nul\x00 and \xff"
		require.NoError(t, defs.AuditMany(ctx, es))
		got, err := defs.AuditLog(ctx, cron.AuditQuery{Limit: cron.MaxAuditLimit})
		require.NoError(t, err)
		require.Len(t, got, 1000)
		assert.Equal(t, "t2499", got[0].Name, "newest first: the last given")
		assert.Equal(t, int64(2500), got[0].ID)
		one, err := defs.AuditLog(ctx, cron.AuditQuery{Name: "t0007"})
		require.NoError(t, err)
		require.Len(t, one, 1)
		assert.Equal(t, "nul\uFFFD and \uFFFD", one[0].Actor)
		assert.Equal(t, int64(8), one[0].ID, "in the order given")
	})
}
