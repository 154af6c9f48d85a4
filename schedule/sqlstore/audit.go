package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/circulation-go/circulation/cron"
)

// MaxAudit is the most entries the audit log of Definitions keeps: past
// it, the oldest are deleted as new ones are kept, a thousand at a time.
const MaxAudit = 100_000

// auditPruneEvery is how many entries are kept between two prunings of
// the audit log.
const auditPruneEvery = 1000

// The statements of the audit log, with {t} and $n as in queries.go.
const (
	insertAuditSQL = `INSERT INTO {t}_audit (at_ns, actor, action, kind, name, detail) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`
	pruneAuditSQL  = `DELETE FROM {t}_audit WHERE id <= $1`
	auditColumns   = `id, at_ns, actor, action, kind, name, detail`
	// The log, of one name or of all, below an id: 0 for no bound. The
	// bound is cast to BIGINT: PostgreSQL would type it from "= 0", as
	// integer, and refuse an id past 2^31-1.
	auditOfSQL  = `SELECT ` + auditColumns + ` FROM {t}_audit WHERE name = $1 AND (CAST($2 AS BIGINT) = 0 OR id < $2) ORDER BY id DESC LIMIT $3`
	auditAllSQL = `SELECT ` + auditColumns + ` FROM {t}_audit WHERE (CAST($1 AS BIGINT) = 0 OR id < $1) ORDER BY id DESC LIMIT $2`
)

// auditQueries holds the statements of the audit log, for a dialect and
// table.
type auditQueries struct {
	insert, prune, of, all string
}

func newAuditQueries(q queries) auditQueries {
	return auditQueries{
		insert: q.rewrite(insertAuditSQL),
		prune:  q.rewrite(pruneAuditSQL),
		of:     q.rewrite(auditOfSQL),
		all:    q.rewrite(auditAllSQL),
	}
}

var _ cron.Auditor = (*Definitions)(nil)

// Audit keeps e in the audit log, {t}_audit, as e.Clip cuts it, with the
// next ID: the admin page and the command-line tool write an entry for
// each change they make. The log keeps the newest MaxAudit entries. An
// entry is its own statement, apart from the change it records: a change
// made may lack its entry if Audit fails.
func (d *Definitions) Audit(ctx context.Context, e cron.AuditEntry) error {
	d.s.mustBeMade()
	e = e.Clip(time.Now())
	var id int64
	err := d.s.retryOp(ctx, hookAudit, 1, func() error {
		return d.s.queryRow(ctx, d.aq.insert, e.At.UnixNano(), e.Actor, e.Action, e.Kind, e.Name, e.Detail).Scan(&id)
	})
	if err != nil {
		return fmt.Errorf("sqlstore: keeping an audit entry: %w", err)
	}
	if id%auditPruneEvery == 0 && id > MaxAudit {
		err = d.s.retryOp(ctx, hookPrune, 1, func() error {
			_, err := d.s.exec(ctx, d.aq.prune, id-MaxAudit)
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlstore: pruning the audit log: %w", err)
		}
	}
	return nil
}

// AuditLog returns the entries of the audit log that q selects, newest
// first.
func (d *Definitions) AuditLog(ctx context.Context, q cron.AuditQuery) ([]cron.AuditEntry, error) {
	d.s.mustBeMade()
	query, args := d.aq.all, []any{q.Before, q.Max()}
	if q.Name != "" {
		query, args = d.aq.of, []any{q.Name, q.Before, q.Max()}
	}
	var es []cron.AuditEntry
	err := d.s.retryOp(ctx, hookAudit, 1, func() error {
		es = es[:0]
		return d.s.query(ctx, query, func(rows *sql.Rows) error {
			var e cron.AuditEntry
			var at int64
			if err := rows.Scan(&e.ID, &at, &e.Actor, &e.Action, &e.Kind, &e.Name, &e.Detail); err != nil {
				return err
			}
			e.At = time.Unix(0, at).UTC()
			es = append(es, e)
			return nil
		}, args...)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading the audit log: %w", err)
	}
	return es, nil
}
