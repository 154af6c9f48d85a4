package sqlstore

// The statements of the claims that count a job's runs in flight
// (schedule.SharedStore.ClaimRun), of hand-overs and of takeovers.

// claimCountedFuncSQL, of schema version 3 on PostgreSQL, is
// {t}_claim_counted: it claims the slots of the JSON records in recs (as
// claimRecordsSQL reads them), each unless its slot has a record, pruning
// passed it, or its job has m runs in flight, and returns the slots it
// claimed. It is for claims under m above 1; those under 1 take their
// job's lane instead (claimLaneBatchSQL).
//
// A claim that counts runs in flight must see every claim of its job that
// committed before it, whichever node made it: the function locks the row
// of {t}_jobs of each job first, in order (made if missing), and the
// insert after that reads a snapshot of its own, taken once the locks are
// held. (A single INSERT ... SELECT would count in the snapshot it started
// with, blind to a claim committed while it waited.)
const claimCountedFuncSQL = `CREATE OR REPLACE FUNCTION {t}_claim_counted(recs json, lease bigint)
RETURNS TABLE (o_job text, o_due bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
	now_us bigint;
BEGIN
	IF current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'sqlstore: the claims need the isolation level read committed, not %',
			current_setting('transaction_isolation');
	END IF;
	INSERT INTO {t}_jobs (job, pruned_until)
	SELECT DISTINCT r.j, -9223372036854775807 FROM json_to_recordset(recs) AS r(j text) ORDER BY 1
	ON CONFLICT (job) DO NOTHING;
	PERFORM 1 FROM {t}_jobs w WHERE w.job IN (SELECT r.j FROM json_to_recordset(recs) AS r(j text))
	ORDER BY w.job FOR UPDATE;
	now_us := CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT);
	RETURN QUERY WITH c AS (
		SELECT b.*, ROW_NUMBER() OVER (PARTITION BY b.j ORDER BY b.d) AS rn
		FROM json_to_recordset(recs) AS b(j text, d bigint, r smallint, st smallint, s bigint, e bigint, n text, x text, a integer, m bigint)
		WHERE NOT EXISTS (SELECT 1 FROM {t} x WHERE x.job = b.j AND x.due = b.d)
			AND NOT EXISTS (SELECT 1 FROM {t}_jobs w WHERE w.job = b.j AND w.pruned_until >= b.d)
	), ins AS (
		INSERT INTO {t} (job, due, reason, status, start_ns, end_ns, node, err, attempt, lease_until)
		SELECT c.j, c.d, c.r, c.st, c.s, c.e, c.n, c.x, c.a, now_us + lease FROM c
		WHERE (SELECT COUNT(*) FROM {t} f WHERE f.job = c.j AND f.status = 0
			AND (f.lease_until >= now_us OR f.released = 1)) + c.rn <= c.m
		ORDER BY c.j, c.d
		ON CONFLICT (job, due) DO NOTHING
		RETURNING {t}.job, {t}.due
	)
	SELECT ins.job, ins.due FROM ins;
END $fn$`

// claimRecordsSQL is the table b of the JSON claims in $1: the records'
// columns (recordsSQL), and m, the runs in flight the claim allows its job
// (0: no limit), and rp, whether it asks them to end.
func claimRecordsSQL(d Dialect) string {
	if d == PostgreSQL {
		return `json_to_recordset(CAST($1 AS json)) AS b(j text, d bigint, r smallint, st smallint, s bigint, e bigint, n text, x text, a integer, p bigint, m bigint, rp boolean)`
	}
	return `(SELECT value->>'j' AS j, value->>'d' AS d, value->>'r' AS r, value->>'st' AS st, value->>'s' AS s,
	value->>'e' AS e, value->>'n' AS n, value->>'x' AS x, value->>'a' AS a, value->>'p' AS p, value->>'m' AS m, value->>'rp' AS rp
	FROM json_each($1)) AS b`
}

const (
	// claimLaneBatchSQL inserts the claims of {c} ($1), under m 0 or 1,
	// whose slots have no record and pruning has not passed, those under
	// m 1 in their jobs' lanes, and returns the slots claimed. One
	// statement, which commits at once: a claim of the same slot or lane
	// waits for it only that long. A claim under m 1 also finds its job
	// busy if a run of another slot is in flight outside the lane (claimed
	// under another limit, by a replica of schema version 2, or Released
	// after its lane was taken). On SQLite, whose one writer makes it
	// atomic, a claim not won may have found its slot taken or its job
	// busy: lostBatchSQL tells which.
	claimLaneBatchSQL = `INSERT INTO {t} (` + columns + `, lease_until, lane)
SELECT b.j, b.d, b.r, b.st, b.s, b.e, b.n, b.x, b.a, b.p, {now} + CAST($2 AS BIGINT),
	CASE WHEN CAST(b.m AS INTEGER) = 1 THEN 0 END FROM {c}
WHERE NOT EXISTS (SELECT 1 FROM {t}_jobs w WHERE w.job = b.j AND w.pruned_until >= b.d)
	AND (CAST(b.m AS INTEGER) <> 1 OR NOT EXISTS (SELECT 1 FROM {t} f WHERE f.job = b.j AND f.status = 0
		AND f.due <> b.d AND (f.released = 1 OR f.lease_until >= {now})))
ORDER BY b.j, b.d
ON CONFLICT DO NOTHING
RETURNING job, due`

	// claimLanePostgresSQL is claimLaneBatchSQL on PostgreSQL, which tells
	// the claims not won apart in the same statement: it returns each slot
	// claimed with 0; with 2 the claims under m 1 whose job is busy: a
	// run of another slot with a live lease, or Released, in the lane or
	// out of it; with 3 those whose lane only a run with an expired lease
	// holds, and with 4 those after the first slot of their job in the
	// batch, none of which it inserts. A claim it does not return found
	// its slot taken, or pruning passed it. A lane taken after the
	// statement's snapshot is not seen held: the insert conflicts with it,
	// and fails (unique_violation), to be sent again. (The running rows of
	// a job are read with a lateral join on the index of running rows: an
	// EXISTS in the select list may be answered with a hash of the whole
	// table, built at each call.)
	claimLanePostgresSQL = `WITH c AS (
	SELECT b.*, CASE WHEN l.h = 2 THEN 2 WHEN l.h = 1 THEN 3
		WHEN b.m = 1 AND DENSE_RANK() OVER (PARTITION BY b.j ORDER BY b.d) > 1 THEN 4
		ELSE 0 END AS o
	FROM {c} LEFT JOIN LATERAL (
		SELECT MAX(CASE WHEN f.released = 1 OR f.lease_until >= {now} THEN 2 WHEN f.lane = 0 THEN 1 ELSE 0 END) AS h
		FROM {t} f WHERE b.m = 1 AND f.job = b.j AND f.status = 0 AND f.due <> b.d
	) l ON TRUE
	WHERE NOT EXISTS (SELECT 1 FROM {t}_jobs w WHERE w.job = b.j AND w.pruned_until >= b.d)
), ins AS (
	INSERT INTO {t} (` + columns + `, lease_until, lane)
	SELECT c.j, c.d, c.r, c.st, c.s, c.e, c.n, c.x, c.a, c.p, {now} + CAST($2 AS BIGINT), CASE WHEN c.m = 1 THEN 0 END
	FROM c WHERE c.o = 0
	ORDER BY c.j, c.d
	ON CONFLICT (job, due) DO NOTHING
	RETURNING job, due
)
SELECT job, due, 0 FROM ins
UNION ALL
SELECT c.j, c.d, c.o FROM c WHERE c.o > 0`

	// claimCountedSQL calls {t}_claim_counted on PostgreSQL: $1 the
	// claims, $2 the lease in microseconds.
	claimCountedSQL = `SELECT o_job, o_due FROM {t}_claim_counted(CAST($1 AS json), CAST($2 AS BIGINT))`

	// claimCountedBatchSQL is {t}_claim_counted on SQLite, whose one writer
	// makes the statement atomic.
	//
	// A run is in flight while its claim runs with a live lease, and,
	// Released, while it waits to be taken over: a run handed over comes
	// before the slots that fall due after it, which would otherwise starve
	// its takeover on a job that is seldom free.
	claimCountedBatchSQL = `INSERT INTO {t} (` + columns + `, lease_until)
SELECT c.j, c.d, c.r, c.st, c.s, c.e, c.n, c.x, c.a, c.p, {now} + CAST($2 AS BIGINT) FROM (
	SELECT b.*, ROW_NUMBER() OVER (PARTITION BY b.j ORDER BY b.d) AS rn FROM {c}
	WHERE NOT EXISTS (SELECT 1 FROM {t} x WHERE x.job = b.j AND x.due = b.d)
		AND NOT EXISTS (SELECT 1 FROM {t}_jobs w WHERE w.job = b.j AND w.pruned_until >= b.d)
) c
WHERE (SELECT COUNT(*) FROM {t} f WHERE f.job = c.j AND f.status = 0
	AND (f.lease_until >= {now} OR f.released = 1)) + c.rn <= CAST(c.m AS INTEGER)
ORDER BY c.j, c.d
ON CONFLICT (job, due) DO NOTHING
RETURNING job, due`

	// lostBatchSQL tells, for each slot of $1, whether it has a record and
	// whether pruning passed it: a claim not won was taken, or its job is
	// busy; and whether a run with an expired lease holds its job's lane,
	// which a claim under m 1 may clear. Joins, not EXISTS in the select
	// list, which PostgreSQL may answer with a hash of the whole table,
	// built at each call; the lane has one row at most.
	lostBatchSQL = `SELECT b.j, b.d, x.job IS NOT NULL, w.job IS NOT NULL, l.job IS NOT NULL FROM {b}
LEFT JOIN {t} x ON x.job = b.j AND x.due = b.d
LEFT JOIN {t}_jobs w ON w.job = b.j AND w.pruned_until >= b.d
LEFT JOIN {t} l ON l.job = b.j AND l.lane = 0 AND l.status = 0 AND l.released = 0 AND l.lease_until < {now}
	AND l.due <> b.d`

	// lookBatchSQL is lostBatchSQL for the slots of $2 on PostgreSQL, and
	// returns the slots of $1, claims won, that pruning passed (see
	// Store.checkPruned). One statement for both.
	lookBatchSQL = `SELECT b.j, b.d, TRUE, TRUE, FALSE FROM {b} JOIN {t}_jobs w ON w.job = b.j AND w.pruned_until >= b.d
UNION ALL
SELECT b.j, b.d, x.job IS NOT NULL, w.job IS NOT NULL, l.job IS NOT NULL FROM {b2}
LEFT JOIN {t} x ON x.job = b.j AND x.due = b.d
LEFT JOIN {t}_jobs w ON w.job = b.j AND w.pruned_until >= b.d
LEFT JOIN {t} l ON l.job = b.j AND l.lane = 0 AND l.status = 0 AND l.released = 0 AND l.lease_until < {now}
	AND l.due <> b.d`

	// unlaneBatchSQL clears the lanes of the jobs of $1 held by runs whose
	// lease expired, Released runs aside, and returns how many it
	// cleared: the claims of those jobs may then take them. A run put out
	// of its lane (lane 1) can no longer be renewed nor retried: its node
	// hears ErrLeaseLost, and the run, once expired, is taken over when
	// its job is free. A lane another statement holds (SKIP LOCKED) is
	// that one's to clear or keep.
	unlaneBatchSQL = `UPDATE {t} SET lane = 1 WHERE (job, due) IN (
	SELECT job, due FROM {t} WHERE lane = 0 AND status = 0 AND released = 0 AND lease_until < {now}
		AND job IN (SELECT b.j FROM {b}) {skiplocked})`

	// askBatchSQL asks the runs in flight of the jobs of $1 whose slots
	// are before the claims' to end (OverlapReplace), but Recovered runs.
	askBatchSQL = `UPDATE {t} SET stop_asked = 1
WHERE status = 0 AND released = 0 AND stop_asked = 0 AND reason <> 3 AND lease_until >= {now}
	AND EXISTS (SELECT 1 FROM {b} WHERE b.j = {t}.job AND CAST(b.d AS BIGINT) > {t}.due)`

	// closeAskedSQL records Canceled the running claims of job $1 that a
	// claim asked to end and whose lease expired: they are not taken over.
	// $2 is the end, $3 the Err.
	closeAskedSQL = `UPDATE {t} SET status = 3, end_ns = $2, err = $3, lease_until = NULL
WHERE job = $1 AND status = 0 AND released = 0 AND stop_asked = 1 AND lease_until < {now}`

	// releaseSQL records the running claim (node, attempt) of a slot
	// released, its lease ended, with End $5 and Err $6: Reclaim takes it
	// over. It stays a running record, which a replica of schema version 2
	// neither prunes nor takes over.
	releaseSQL = `UPDATE {t} SET released = 1, lease_until = NULL, end_ns = $5, err = $6
WHERE job = $1 AND due = $2 AND node = $3 AND attempt = $4 AND status = 0 AND released = 0`

	// lockJobSQL and lockJobRowSQL make and lock the row of {t}_jobs of
	// job $1, on PostgreSQL, for a Reclaim that counts its runs in flight
	// under a limit above 1.
	lockJobSQL = `INSERT INTO {t}_jobs (job, pruned_until) VALUES ($1, -9223372036854775807)
ON CONFLICT (job) DO NOTHING`
	lockJobRowSQL = `SELECT 1 FROM {t}_jobs WHERE job = $1 FOR UPDATE`

	// reclaimRunSQL hands a claim of job $1 to take over, released or
	// running with an expired lease (and not asked to end), to node $2,
	// with a fresh lease of $3 microseconds, started at $4, unless the job
	// has $5 runs in flight with a live lease ($5 > 0). It takes the
	// oldest, but under $5 = 1 the one in the job's lane first, and puts it
	// in the lane: a claim that holds it conflicts. The outer conditions
	// repeat the inner ones: on PostgreSQL, a row another transaction
	// changed meanwhile is checked again as it is now.
	reclaimRunSQL = `UPDATE {t} SET node = $2, attempt = attempt + 1, reason = 3, start_ns = $4,
	end_ns = NULL, err = '', stop_asked = 0, released = 0, lease_until = {now} + $3,
	lane = CASE WHEN CAST($5 AS BIGINT) = 1 THEN 0 END
WHERE job = $1 AND status = 0 AND ((lease_until < {now} AND stop_asked = 0) OR released = 1) AND due = (
	SELECT due FROM {t} WHERE job = $1 AND status = 0 AND ((lease_until < {now} AND stop_asked = 0) OR released = 1)
	ORDER BY CASE WHEN CAST($5 AS BIGINT) = 1 AND lane = 0 THEN 0 ELSE 1 END, due LIMIT 1 {skiplocked})
	AND (CAST($5 AS BIGINT) = 0 OR (SELECT COUNT(*) FROM {t} f
		WHERE f.job = $1 AND f.status = 0 AND f.released = 0 AND f.lease_until >= {now}) < CAST($5 AS BIGINT))
RETURNING ` + readColumns + `
`
)
