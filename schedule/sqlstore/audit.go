package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
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
	// The log, of one name or of all, of one kind or of all (''), below
	// an id (0 for no bound). The bound is cast to BIGINT: PostgreSQL
	// would type it from "= 0", as integer, and refuse an id past 2^31-1.
	auditOfSQL = `SELECT ` + auditColumns + ` FROM {t}_audit WHERE name = $1 AND (CAST($2 AS TEXT) = '' OR kind = $2)
	AND (CAST($3 AS BIGINT) = 0 OR id < $3) ORDER BY id DESC LIMIT $4`
	auditAllSQL = `SELECT ` + auditColumns + ` FROM {t}_audit WHERE (CAST($1 AS TEXT) = '' OR kind = $1)
	AND (CAST($2 AS BIGINT) = 0 OR id < $2) ORDER BY id DESC LIMIT $3`
)

// insertAuditsPG and insertAuditsSQLite keep the entries of the JSON
// array $1, in its order, and return the greatest id.
const (
	insertAuditsPG = `INSERT INTO {t}_audit (at_ns, actor, action, kind, name, detail)
SELECT b.at_ns, b.actor, b.action, b.kind, b.name, b.detail
FROM json_array_elements(CAST($1 AS json)) WITH ORDINALITY AS e(v, i),
	json_to_record(e.v) AS b(at_ns bigint, actor text, action text, kind text, name text, detail text)
ORDER BY e.i RETURNING id`
	insertAuditsSQLite = `INSERT INTO {t}_audit (at_ns, actor, action, kind, name, detail)
SELECT value->>'at_ns', value->>'actor', value->>'action', value->>'kind', value->>'name', value->>'detail'
FROM json_each($1) ORDER BY key RETURNING id`
)

// auditQueries holds the statements of the audit log, for a dialect and
// table.
type auditQueries struct {
	insert, inserts, prune, of, all string
}

func newAuditQueries(q queries) auditQueries {
	return auditQueries{
		insert:  q.rewrite(insertAuditSQL),
		inserts: q.rewrite(map[Dialect]string{PostgreSQL: insertAuditsPG, SQLite: insertAuditsSQLite}[q.dialect]),
		prune:   q.rewrite(pruneAuditSQL),
		of:      q.rewrite(auditOfSQL),
		all:     q.rewrite(auditAllSQL),
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
	return d.pruneAudit(ctx, id-1, id)
}

// auditRow is an entry as insertAudits reads it from JSON.
type auditRow struct {
	AtNs   int64  `json:"at_ns"`
	Actor  string `json:"actor"`
	Action string `json:"action"`
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Detail string `json:"detail"`
}

// AuditMany keeps es in the audit log, in their order, as Audit keeps
// one, a statement for each thousand: the command-line tool's entries of
// a file of definitions, one for each task it created, replaced or
// deleted.
func (d *Definitions) AuditMany(ctx context.Context, es []cron.AuditEntry) error {
	d.s.mustBeMade()
	now := time.Now()
	for from := 0; from < len(es); from += bulkRows {
		part := es[from:min(from+bulkRows, len(es))]
		rows := make([]auditRow, len(part))
		for i, e := range part {
			e = e.Clip(now)
			rows[i] = auditRow{e.At.UnixNano(), e.Actor, e.Action, e.Kind, e.Name, e.Detail}
		}
		b, err := json.Marshal(rows)
		if err != nil {
			return fmt.Errorf("sqlstore: keeping audit entries: %w", err)
		}
		var last int64
		err = d.s.retryOp(ctx, hookAudit, len(part), func() error {
			last = 0
			return d.s.query(ctx, d.aq.inserts, func(rows *sql.Rows) error {
				var id int64
				if err := rows.Scan(&id); err != nil {
					return err
				}
				last = max(last, id)
				return nil
			}, string(b))
		})
		if err != nil {
			return fmt.Errorf("sqlstore: keeping audit entries: %w", err)
		}
		if err := d.pruneAudit(ctx, last-int64(len(part)), last); err != nil {
			return err
		}
	}
	return nil
}

// pruneAudit deletes the entries more than MaxAudit ids older than to, if
// the ids after from up to to hold a thousandth.
func (d *Definitions) pruneAudit(ctx context.Context, from, to int64) error {
	if to <= MaxAudit || to/auditPruneEvery == from/auditPruneEvery {
		return nil
	}
	err := d.s.retryOp(ctx, hookPrune, 1, func() error {
		_, err := d.s.exec(ctx, d.aq.prune, to-MaxAudit)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlstore: pruning the audit log: %w", err)
	}
	return nil
}

// AuditLog returns the entries of the audit log that q selects, newest
// first.
func (d *Definitions) AuditLog(ctx context.Context, q cron.AuditQuery) ([]cron.AuditEntry, error) {
	d.s.mustBeMade()
	query, args := d.aq.all, []any{q.Kind, q.Before, q.Max()}
	if q.Name != "" {
		query, args = d.aq.of, []any{q.Name, q.Kind, q.Before, q.Max()}
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
