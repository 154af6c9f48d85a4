package sqlstore

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The statements of a batch take its records as one JSON array in $1,
// which each dialect reads as a table b of typed columns: j job, d due,
// r reason, st status, s start_ns, e end_ns, n node, x err, a attempt,
// p planned_ns.
// One parameter, whatever the size of the batch, and no driver-specific
// array type: any driver passes a string.

// recordsSQL is the table b of the JSON records in $1.
func recordsSQL(d Dialect) string {
	if d == PostgreSQL {
		return `json_to_recordset(CAST($1 AS json)) AS b(j text, d bigint, r smallint, st smallint, s bigint, e bigint, n text, x text, a integer, p bigint)`
	}
	return `(SELECT value->>'j' AS j, value->>'d' AS d, value->>'r' AS r, value->>'st' AS st, value->>'s' AS s,
	value->>'e' AS e, value->>'n' AS n, value->>'x' AS x, value->>'a' AS a, value->>'p' AS p FROM json_each($1)) AS b`
}

// jobsSQL is the distinct job names of the JSON array of strings in $1.
func jobsSQL(d Dialect) string {
	if d == PostgreSQL {
		return `SELECT DISTINCT j FROM json_array_elements_text(CAST($1 AS json)) AS x(j)`
	}
	return `SELECT DISTINCT value FROM json_each($1)`
}

// batchQueries holds the statements of batches, for a dialect and table.
type batchQueries struct {
	finish, renew        string
	claimLane, counted   string
	look, unlane, ask    string
	pruneWater, pruneDel string
	lastOf               string
	sinceOf, note        string
	claimed              string
}

// lastOfSQL returns the last record of each job of the JSON array of
// names in $1 that has one: on PostgreSQL a lookup of the primary key's
// index for each, on SQLite the latest due of each job first.
func lastOfSQL(d Dialect) string {
	if d == PostgreSQL {
		return `SELECT l.job, l.due, l.reason, l.status, l.start_ns, l.end_ns, l.node, l.err, l.attempt, l.planned_ns
FROM json_array_elements_text(CAST($1 AS json)) AS x(j)
CROSS JOIN LATERAL (SELECT ` + readColumns + ` FROM {t} WHERE job = x.j ORDER BY due DESC LIMIT 1) AS l`
	}
	return `SELECT ` + readColumns + ` FROM {t} WHERE (job, due) IN (
	SELECT job, MAX(due) FROM {t} WHERE job IN (SELECT value FROM json_each($1)) GROUP BY job)`
}

// The batch statements, with {b} for the records of $1, {jobs} for the job
// names of $1, and {t} and {now} as in the single statements.
const (
	// finishBatchSQL writes the outcomes of the claims (node, attempt) of
	// the records, and returns the slots it matched.
	finishBatchSQL = `UPDATE {t} SET reason = b.r, status = b.st, start_ns = b.s, end_ns = b.e, err = b.x, lease_until = NULL
FROM {b} WHERE {t}.job = b.j AND {t}.due = b.d AND {t}.node = b.n AND {t}.attempt = b.a
RETURNING job, due`

	// renewBatchSQL extends the leases of the running claims (node,
	// attempt) of the records by $2 microseconds, but those put out of
	// their job's lane (renewSQL), and returns the slots it matched.
	renewBatchSQL = `UPDATE {t} SET lease_until = {now} + CAST($2 AS BIGINT)
FROM {b} WHERE {t}.job = b.j AND {t}.due = b.d AND {t}.node = b.n AND {t}.attempt = b.a AND {t}.status = 0
	AND {t}.released = 0 AND ({t}.lane IS NULL OR {t}.lane <> 1)
RETURNING job, due, stop_asked`

	// doomedManySQL is doomedSQL for every job of $1: the finished records
	// past the counts kept ($2 succeeded, $3 others), but never a job's
	// last record, nor one of the newest keptStreak others after its
	// latest Succeeded record, nor one at or after the cutoff $4 among
	// the newest $5 of its kind.
	doomedManySQL = `SELECT r.job, r.due FROM (
	SELECT job, due, status, ROW_NUMBER() OVER (
		PARTITION BY job, CASE WHEN status = 1 THEN 1 ELSE 0 END ORDER BY due DESC) AS rn,
		MAX(CASE WHEN status = 1 THEN due END) OVER (PARTITION BY job) AS ok
	FROM {t} WHERE job IN ({jobs}) AND status <> 0) r
WHERE ((r.status = 1 AND r.rn > $2) OR (r.status <> 1 AND r.rn > $3
		AND (r.rn > ` + keptStreak + ` OR r.due < COALESCE(r.ok, ` + minDue + `))))
	AND (r.due < $4 OR r.rn > $5)
	AND r.due < (SELECT MAX(m.due) FROM {t} m WHERE m.job = r.job)`

	// pruneWaterBatchSQL raises the watermark of each job of $1 to the
	// newest record it dooms, before pruneDelBatchSQL deletes them, as
	// pruneWaterSQL does for one job. Its rows are locked in the order of
	// the jobs, as the claims that count runs in flight lock them.
	pruneWaterBatchSQL = `INSERT INTO {t}_jobs (job, pruned_until)
SELECT job, MAX(due) FROM (` + doomedManySQL + `) d WHERE true GROUP BY job ORDER BY job
ON CONFLICT (job) DO UPDATE SET pruned_until = CASE
	WHEN excluded.pruned_until > {t}_jobs.pruned_until THEN excluded.pruned_until
	ELSE {t}_jobs.pruned_until END`

	// pruneDelBatchSQL deletes the doomed records of the jobs of $1 that
	// their watermark has passed: a record finished since the watermark
	// was raised stays.
	pruneDelBatchSQL = `DELETE FROM {t} WHERE status <> 0
	AND EXISTS (SELECT 1 FROM {t}_jobs w WHERE w.job = {t}.job AND w.pruned_until >= {t}.due)
	AND (job, due) IN (SELECT job, due FROM (` + doomedManySQL + `) d)`
)

// The prune statements on PostgreSQL, whose planner may answer job IN
// (...) with a scan of the whole table, as it does while the table has no
// statistics (a table just filled, a herd's): they read the records of
// each job of $1 from the primary key's index, one job at a time, and
// delete the doomed by their row addresses. Their cost is that of the
// records of the jobs pruned, whatever the size of the table.
const (
	// doomedEachSQL is doomedManySQL, with each record's row address,
	// and each job's last record read once.
	doomedEachSQL = `SELECT r.job, r.due, r.ctid FROM ({jobs}) x
CROSS JOIN LATERAL (SELECT MAX(m.due) AS last FROM {t} m WHERE m.job = x.j) l
CROSS JOIN LATERAL (
	SELECT ctid, job, due, status, ROW_NUMBER() OVER (
		PARTITION BY CASE WHEN status = 1 THEN 1 ELSE 0 END ORDER BY due DESC) AS rn,
		MAX(CASE WHEN status = 1 THEN due END) OVER () AS ok
	FROM {t} WHERE job = x.j AND status <> 0) r
WHERE ((r.status = 1 AND r.rn > $2) OR (r.status <> 1 AND r.rn > $3
		AND (r.rn > ` + keptStreak + ` OR r.due < COALESCE(r.ok, ` + minDue + `))))
	AND (r.due < $4 OR r.rn > $5)
	AND r.due < l.last`

	// pruneWaterPostgresSQL is pruneWaterBatchSQL, and pruneDelPostgresSQL
	// pruneDelBatchSQL, on PostgreSQL.
	pruneWaterPostgresSQL = `INSERT INTO {t}_jobs (job, pruned_until)
SELECT job, MAX(due) FROM (` + doomedEachSQL + `) d GROUP BY job ORDER BY job
ON CONFLICT (job) DO UPDATE SET pruned_until = CASE
	WHEN excluded.pruned_until > {t}_jobs.pruned_until THEN excluded.pruned_until
	ELSE {t}_jobs.pruned_until END`

	pruneDelPostgresSQL = `DELETE FROM {t} WHERE ctid = ANY(ARRAY(SELECT d.ctid FROM (` + doomedEachSQL + `) d))
	AND status <> 0
	AND EXISTS (SELECT 1 FROM {t}_jobs w WHERE w.job = {t}.job AND w.pruned_until >= {t}.due)`
)

const (
	// sinceOfBatchSQL is the since statement for each record of $1: job
	// j, time d. (The WHERE makes SQLite read ON CONFLICT as the
	// upsert's, not the join's.)
	sinceOfBatchSQL = `INSERT INTO {t}_since (job, since)
SELECT b.j, b.d FROM {b} WHERE true ORDER BY b.j
ON CONFLICT (job) DO UPDATE SET since = CASE
	WHEN excluded.since < {t}_since.since THEN excluded.since
	ELSE {t}_since.since END
RETURNING job, since`

	// noteBatchSQL inserts the finished records of $1 whose slots have
	// none, unless pruning passed them.
	noteBatchSQL = `INSERT INTO {t} (` + columns + `)
SELECT b.j, b.d, b.r, b.st, b.s, b.e, b.n, b.x, b.a, b.p FROM {b}
WHERE NOT EXISTS (SELECT 1 FROM {t}_jobs w WHERE w.job = b.j AND w.pruned_until >= b.d)
ORDER BY b.j, b.d
ON CONFLICT (job, due) DO NOTHING`
)

func buildBatchQueries(d Dialect, table string) batchQueries {
	r := strings.NewReplacer("{b}", recordsSQL(d), "{b2}", strings.Replace(recordsSQL(d), "$1", "$2", 1),
		"{c}", claimRecordsSQL(d), "{jobs}", jobsSQL(d))
	single := buildQueries(d, table) // for its replacements of {t} and {now}, and $n on SQLite
	q := func(s string) string { return single.rewrite(r.Replace(s)) }
	return batchQueries{
		claimLane:  q(map[Dialect]string{PostgreSQL: claimLanePostgresSQL, SQLite: claimLaneBatchSQL}[d]),
		counted:    q(map[Dialect]string{PostgreSQL: claimCountedSQL, SQLite: claimCountedBatchSQL}[d]),
		look:       q(map[Dialect]string{PostgreSQL: lookBatchSQL, SQLite: lostBatchSQL}[d]),
		unlane:     q(unlaneBatchSQL),
		ask:        q(askBatchSQL),
		finish:     q(finishBatchSQL),
		renew:      q(renewBatchSQL),
		pruneWater: q(map[Dialect]string{PostgreSQL: pruneWaterPostgresSQL, SQLite: pruneWaterBatchSQL}[d]),
		pruneDel:   q(map[Dialect]string{PostgreSQL: pruneDelPostgresSQL, SQLite: pruneDelBatchSQL}[d]),
		lastOf:     q(lastOfSQL(d)),
		sinceOf:    q(sinceOfBatchSQL),
		note:       q(noteBatchSQL),
		claimed:    q(claimedSQL),
	}
}

// sortRequests sorts rs by slot, so that the statements of several
// Stores, in one process or many, take the locks of the slots they share
// in the same order, and none waits for another that waits for it (a
// deadlock that PostgreSQL breaks by failing one of them).
func sortRequests(rs []*request) {
	slices.SortFunc(rs, func(a, b *request) int {
		if c := strings.Compare(a.w.job, b.w.job); c != 0 {
			return c
		}
		return cmp.Compare(a.w.due, b.w.due)
	})
}

// appendRecords appends the JSON array of the records of rs to buf.
func appendRecords(buf []byte, rs []*request) []byte {
	buf = append(buf, '[')
	for i, r := range rs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendRecord(buf, &r.w)
	}
	return append(buf, ']')
}

// appendRecord appends the JSON object of w to buf.
func appendRecord(buf []byte, w *row) []byte {
	buf = append(buf, `{"j":`...)
	buf = appendJSONString(buf, w.job)
	buf = append(buf, `,"d":`...)
	buf = strconv.AppendInt(buf, w.due, 10)
	buf = append(buf, `,"r":`...)
	buf = strconv.AppendInt(buf, w.reason, 10)
	buf = append(buf, `,"st":`...)
	buf = strconv.AppendInt(buf, w.status, 10)
	buf = append(buf, `,"s":`...)
	buf = appendNullInt(buf, w.start.Int64, w.start.Valid)
	buf = append(buf, `,"e":`...)
	buf = appendNullInt(buf, w.end.Int64, w.end.Valid)
	buf = append(buf, `,"n":`...)
	buf = appendJSONString(buf, w.node)
	buf = append(buf, `,"x":`...)
	buf = appendJSONString(buf, w.err)
	buf = append(buf, `,"a":`...)
	buf = strconv.AppendInt(buf, w.attempt, 10)
	buf = append(buf, `,"p":`...)
	buf = appendNullInt(buf, w.planned.Int64, w.planned.Valid)
	return append(buf, '}')
}

// appendClaims appends the JSON array of the claims of rs to buf: their
// records, and m and rp (see claimRecordsSQL).
func appendClaims(buf []byte, rs []*request) []byte {
	buf = append(buf, '[')
	for i, r := range rs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendRecord(buf, &r.w)
		buf = append(buf[:len(buf)-1], `,"m":`...) // in place of the record's '}'
		buf = strconv.AppendInt(buf, r.m, 10)
		buf = append(buf, `,"rp":`...)
		buf = strconv.AppendBool(buf, r.rp)
		buf = append(buf, '}')
	}
	return append(buf, ']')
}

// appendJobs appends the JSON array of the jobs of rs to buf.
func appendJobs(buf []byte, rs []*request) []byte {
	buf = append(buf, '[')
	for i, r := range rs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, r.w.job)
	}
	return append(buf, ']')
}

func appendNullInt(buf []byte, v int64, valid bool) []byte {
	if !valid {
		return append(buf, "null"...)
	}
	return strconv.AppendInt(buf, v, 10)
}

// appendJSONString appends s, valid UTF-8 without NUL (toRow checked or
// made it so), as a JSON string.
func appendJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			buf = append(buf, '\\', c)
		case c < 0x20:
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		case c < utf8.RuneSelf:
			buf = append(buf, c)
		default:
			_, n := utf8.DecodeRuneInString(s[i:])
			buf = append(buf, s[i:i+n]...)
			i += n
			continue
		}
		i++
	}
	return append(buf, '"')
}
