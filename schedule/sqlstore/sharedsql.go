package sqlstore

// The statements of the claims that count a job's runs in flight
// (schedule.SharedStore.ClaimRun), of hand-overs and of takeovers.

// claimRunFuncSQL, of schema version 3 on PostgreSQL, is {t}_claim_run:
// it claims the slots of the JSON records in recs (as claimRecordsSQL
// reads them), each unless its slot has a record, pruning passed it, or
// its job has m runs in flight (m > 0), and returns
// the outcome of each slot: 0 claimed, 1 it has a record, 2 its job is
// busy; it asks the runs in flight of the busy jobs whose claims say rp
// (OverlapReplace) to end. One call, so one round trip for a batch.
//
// A claim that counts runs in flight must see every claim of its job
// that committed before it, whichever node made it: the function locks
// the row of {t}_jobs of each such job first, in order (made if missing),
// and each statement after that reads a snapshot of its own, taken once
// the locks are held. (A single INSERT ... SELECT would count in the
// snapshot it started with, blind to a claim committed while it waited.)
const claimRunFuncSQL = `CREATE OR REPLACE FUNCTION {t}_claim_run(recs json, lease bigint)
RETURNS TABLE (o_job text, o_due bigint, o_outcome smallint)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
	now_us bigint;
	won_j  text[];
	won_d  bigint[];
BEGIN
	IF current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'sqlstore: the claims need the isolation level read committed, not %',
			current_setting('transaction_isolation');
	END IF;
	INSERT INTO {t}_jobs (job, pruned_until)
	SELECT DISTINCT r.j, -9223372036854775807 FROM json_to_recordset(recs) AS r(j text, m bigint)
	WHERE r.m > 0 ORDER BY 1
	ON CONFLICT (job) DO NOTHING;
	PERFORM 1 FROM {t}_jobs w
	WHERE w.job IN (SELECT r.j FROM json_to_recordset(recs) AS r(j text, m bigint) WHERE r.m > 0)
	ORDER BY w.job FOR UPDATE;
	now_us := CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT);
	WITH c AS (
		SELECT b.*, ROW_NUMBER() OVER (PARTITION BY b.j ORDER BY b.d) AS rn
		FROM json_to_recordset(recs) AS b(j text, d bigint, r smallint, st smallint, s bigint, e bigint, n text, x text, a integer, m bigint)
		WHERE NOT EXISTS (SELECT 1 FROM {t} x WHERE x.job = b.j AND x.due = b.d)
			AND NOT EXISTS (SELECT 1 FROM {t}_jobs w WHERE w.job = b.j AND w.pruned_until >= b.d)
	), ins AS (
		INSERT INTO {t} (job, due, reason, status, start_ns, end_ns, node, err, attempt, lease_until)
		SELECT c.j, c.d, c.r, c.st, c.s, c.e, c.n, c.x, c.a, now_us + lease FROM c
		WHERE c.m = 0 OR (SELECT COUNT(*) FROM {t} f WHERE f.job = c.j AND f.status = 0
			AND (f.lease_until >= now_us OR f.released = 1)) + c.rn <= c.m
		ORDER BY c.j, c.d
		ON CONFLICT (job, due) DO NOTHING
		RETURNING {t}.job, {t}.due
	)
	SELECT array_agg(ins.job), array_agg(ins.due) INTO won_j, won_d FROM ins;
	RETURN QUERY SELECT u.j, u.d, CAST(0 AS SMALLINT) FROM unnest(won_j, won_d) AS u(j, d);
	RETURN QUERY SELECT b.j, b.d, CAST(CASE
		WHEN EXISTS (SELECT 1 FROM {t} x WHERE x.job = b.j AND x.due = b.d)
			OR EXISTS (SELECT 1 FROM {t}_jobs w WHERE w.job = b.j AND w.pruned_until >= b.d)
		THEN 1 ELSE 2 END AS SMALLINT)
	FROM json_to_recordset(recs) AS b(j text, d bigint)
	LEFT JOIN unnest(won_j, won_d) AS u(j, d) ON u.j = b.j AND u.d = b.d
	WHERE u.j IS NULL;
	UPDATE {t} f SET stop_asked = 1
	FROM (
		SELECT b.j, MAX(b.d) AS d FROM json_to_recordset(recs) AS b(j text, d bigint, rp boolean)
		LEFT JOIN unnest(won_j, won_d) AS u(j, d) ON u.j = b.j AND u.d = b.d
		WHERE b.rp AND u.j IS NULL AND NOT EXISTS (SELECT 1 FROM {t} x WHERE x.job = b.j AND x.due = b.d)
		GROUP BY b.j
	) a
	WHERE f.job = a.j AND f.due < a.d AND f.status = 0 AND f.released = 0 AND f.stop_asked = 0 AND f.reason <> 3
		AND f.lease_until >= now_us;
END $fn$`

// claimRecordsSQL is the table b of the JSON claims in $1: the records'
// columns (recordsSQL), and m, the runs in flight the claim allows its job
// (0: no limit), and rp, whether it asks them to end.
func claimRecordsSQL(d Dialect) string {
	if d == PostgreSQL {
		return `json_to_recordset(CAST($1 AS json)) AS b(j text, d bigint, r smallint, st smallint, s bigint, e bigint, n text, x text, a integer, m bigint, rp boolean)`
	}
	return `(SELECT value->>'j' AS j, value->>'d' AS d, value->>'r' AS r, value->>'st' AS st, value->>'s' AS s,
	value->>'e' AS e, value->>'n' AS n, value->>'x' AS x, value->>'a' AS a, value->>'m' AS m, value->>'rp' AS rp
	FROM json_each($1)) AS b`
}

const (
	// claimRunSQL calls {t}_claim_run on PostgreSQL: $1 the claims, $2
	// the lease in microseconds.
	claimRunSQL = `SELECT o_job, o_due, o_outcome FROM {t}_claim_run(CAST($1 AS json), CAST($2 AS BIGINT))`

	// claimRunBatchSQL is {t}_claim_run's insert on SQLite, where a
	// statement that writes runs alone: the claims of {c} ($1) whose slots
	// have no record, pruning has not passed, and whose jobs have fewer
	// than m runs in flight. It returns the slots claimed.
	//
	// A run is in flight while its claim runs with a live lease, and,
	// Released, while it waits to be taken over: a run handed over comes
	// before the slots that fall due after it, which would otherwise starve
	// its takeover on a job that is seldom free.
	claimRunBatchSQL = `INSERT INTO {t} (` + columns + `, lease_until)
SELECT c.j, c.d, c.r, c.st, c.s, c.e, c.n, c.x, c.a, {now} + CAST($2 AS BIGINT) FROM (
	SELECT b.*, ROW_NUMBER() OVER (PARTITION BY b.j ORDER BY b.d) AS rn FROM {c}
	WHERE NOT EXISTS (SELECT 1 FROM {t} x WHERE x.job = b.j AND x.due = b.d)
		AND NOT EXISTS (SELECT 1 FROM {t}_jobs w WHERE w.job = b.j AND w.pruned_until >= b.d)
) c
WHERE c.m = 0 OR (SELECT COUNT(*) FROM {t} f WHERE f.job = c.j AND f.status = 0
	AND (f.lease_until >= {now} OR f.released = 1)) + c.rn <= c.m
ORDER BY c.j, c.d
ON CONFLICT (job, due) DO NOTHING
RETURNING job, due`

	// takenBatchSQL returns the slots of $1 that have a record, or that
	// pruning passed.
	takenBatchSQL = `SELECT b.j, b.d FROM {b} WHERE EXISTS (SELECT 1 FROM {t} x WHERE x.job = b.j AND x.due = b.d)
	OR EXISTS (SELECT 1 FROM {t}_jobs w WHERE w.job = b.j AND w.pruned_until >= b.d)`

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
	// job $1, on PostgreSQL, for a Reclaim that counts its runs in flight.
	lockJobSQL = `INSERT INTO {t}_jobs (job, pruned_until) VALUES ($1, -9223372036854775807)
ON CONFLICT (job) DO NOTHING`
	lockJobRowSQL = `SELECT 1 FROM {t}_jobs WHERE job = $1 FOR UPDATE`

	// reclaimRunSQL hands the oldest claim of job $1 to take over, released
	// or running with an expired lease (and not asked to end), to node $2,
	// with a fresh lease of $3 microseconds, started at $4, unless the job
	// has $5 runs in flight with a live lease ($5 > 0). The outer
	// conditions repeat the inner ones: on PostgreSQL, a row another
	// transaction changed meanwhile is checked again as it is now.
	reclaimRunSQL = `UPDATE {t} SET node = $2, attempt = attempt + 1, reason = 3, start_ns = $4,
	end_ns = NULL, err = '', stop_asked = 0, released = 0, lease_until = {now} + $3
WHERE job = $1 AND status = 0 AND ((lease_until < {now} AND stop_asked = 0) OR released = 1) AND due = (
	SELECT due FROM {t} WHERE job = $1 AND status = 0 AND ((lease_until < {now} AND stop_asked = 0) OR released = 1)
	ORDER BY due LIMIT 1 {skiplocked})
	AND (CAST($5 AS BIGINT) = 0 OR (SELECT COUNT(*) FROM {t} f
		WHERE f.job = $1 AND f.status = 0 AND f.released = 0 AND f.lease_until >= {now}) < CAST($5 AS BIGINT))
RETURNING ` + readColumns + `
`
)
