package sqlstore

import (
	"regexp"
	"strings"
)

// queries holds the statements of a Store, for its dialect and table.
type queries struct {
	dialect Dialect
	table   string

	claim, adopt, pruned, unclaim   string
	expired                         string
	finish, last, history           string
	renew, reclaim, expiredJobs     string
	pruneMark, pruneWater, pruneDel string
	since, retry                    string
	closeAsked, lockJob, lockJobRow string
	takeable, release               string
	heartbeat, nodes, forgetNodes   string
	again, againable, unlane        string
}

// keptStreak is how many of the records that are not Succeeded, after a
// job's latest Succeeded one, pruning keeps whatever WithHistory says: as
// many as schedule.WithPauseOnFailures looks at, 4n+32 for n up to
// schedule.MaxPauseOnFailures, so that a job that pauses on failures
// finds them among its Skipped and Missed records; minDue stands for "no
// Succeeded record".
const (
	keptStreak = "432"
	minDue     = "-9223372036854775807"
)

const columns = "job, due, reason, status, start_ns, end_ns, node, err, attempt, planned_ns"

// readColumns are columns as a query reads them: a running record that
// was released reads as status 6, schedule.Released.
const readColumns = "job, due, reason, CASE WHEN released = 1 THEN 6 ELSE status END AS status, start_ns, end_ns, node, err, attempt, planned_ns"

// The statements, with {t} for the table, {now} for the database's clock
// in Unix microseconds and {skiplocked} for PostgreSQL's row-lock clause.
// Parameters are $n; SQLite gets ?n, its spelling of a numbered parameter.
const (
	// claim inserts a record unless its slot has one, or pruning passed it.
	claimSQL = `INSERT INTO {t} (` + columns + `, lease_until)
SELECT CAST($1 AS TEXT), CAST($2 AS BIGINT), CAST($3 AS SMALLINT), CAST($4 AS SMALLINT),
	CAST($5 AS BIGINT), CAST($6 AS BIGINT), CAST($7 AS TEXT), CAST($8 AS TEXT), CAST($9 AS INTEGER),
	CAST($11 AS BIGINT), {now} + CAST($10 AS BIGINT)
WHERE NOT EXISTS (SELECT 1 FROM {t}_jobs WHERE job = $1 AND pruned_until >= $2)
ON CONFLICT (job, due) DO NOTHING`

	// expired reports whether a job has a claim to take over: a running
	// claim whose lease expired, or a released one. SQLite runs it before
	// reclaim, which each free replica runs at each slot: a read does not
	// take the database's one write lock, which the other processes'
	// claims, renewals and finishes wait for, and costs half as much
	// (BenchmarkReclaim). Claim has no such read: with it, three replicas
	// claiming each slot were slower (BenchmarkClaimFinish/SQLite/replicas=3).
	expiredSQL = `SELECT EXISTS (SELECT 1 FROM {t} WHERE job = $1 AND status = 0 AND (lease_until < {now} OR released = 1))`

	// takeableSQL reports whether a job has a claim Reclaim would take
	// over, the limit aside: released, or expired and not asked to end.
	takeableSQL = `SELECT EXISTS (SELECT 1 FROM {t} WHERE job = $1 AND status = 0
	AND ((lease_until < {now} AND stop_asked = 0) OR released = 1))`

	// expiredJobsSQL lists up to $1 jobs that have a claim to take over:
	// one look for all the jobs of a Store. It reads the running rows
	// only, through the index of them.
	expiredJobsSQL = `SELECT DISTINCT job FROM {t} WHERE status = 0 AND (lease_until < {now} OR released = 1) LIMIT $1`

	// adopt hands a running claim ($3, $4) of a slot, whose Claim failed
	// but may have committed, to the claim $5 to $10 (see Store.adopt).
	adoptSQL = `UPDATE {t} SET reason = $5, status = $6, start_ns = $7, end_ns = $8, node = $9, err = $10,
	lease_until = {now} + $11
WHERE job = $1 AND due = $2 AND node = $3 AND attempt = $4 AND status = 0 AND released = 0
	AND lease_until >= {now}`

	// pruned reports whether pruning passed a slot; unclaim withdraws a
	// claim that did (see Claim).
	prunedSQL  = `SELECT COUNT(*) FROM {t}_jobs WHERE job = $1 AND pruned_until >= $2`
	unclaimSQL = `DELETE FROM {t} WHERE job = $1 AND due = $2 AND node = $3 AND attempt = $4 AND status = $5`

	// finish writes the outcome of the claim (node, attempt) of a slot.
	finishSQL = `UPDATE {t} SET reason = $5, status = $6, start_ns = $7, end_ns = $8, err = $9, lease_until = NULL
WHERE job = $1 AND due = $2 AND node = $3 AND attempt = $4`

	lastSQL    = `SELECT ` + readColumns + ` FROM {t} WHERE job = $1 ORDER BY due DESC LIMIT 1`
	historySQL = `SELECT ` + readColumns + ` FROM {t} WHERE job = $1 ORDER BY due DESC LIMIT $2`

	// renew extends the lease of the claim (node, attempt) of a running
	// slot, unless a claim put it out of its job's lane (lane 1, see
	// unlaneBatchSQL), and says whether a claim asked the run to end.
	renewSQL = `UPDATE {t} SET lease_until = {now} + $5
WHERE job = $1 AND due = $2 AND node = $3 AND attempt = $4 AND status = 0 AND released = 0
	AND (lane IS NULL OR lane <> 1)
RETURNING stop_asked`

	// ranked numbers a job's finished records, newest first, the
	// succeeded and the others apart; doomed are those past the counts
	// kept ($2 succeeded, $3 others), but never the job's last record,
	// whatever its status: Last must still find where the job stopped;
	// nor one of the newest keptStreak others that came after the job's
	// latest Succeeded record: schedule.WithPauseOnFailures counts them;
	// nor one whose slot is at or after the cutoff $4 (WithRetention) and
	// among the newest $5 of its kind (MaxRetained).
	rankedSQL = `SELECT due, status, ROW_NUMBER() OVER (
	PARTITION BY CASE WHEN status = 1 THEN 1 ELSE 0 END ORDER BY due DESC) AS rn,
	MAX(CASE WHEN status = 1 THEN due END) OVER () AS ok
FROM {t} WHERE job = $1 AND status <> 0`
	doomedSQL = `SELECT due FROM (` + rankedSQL + `) r WHERE ((status = 1 AND rn > $2) OR (status <> 1 AND rn > $3
		AND (rn > ` + keptStreak + ` OR due < COALESCE(ok, ` + minDue + `))))
	AND (due < $4 OR rn > $5)
	AND due < (SELECT MAX(due) FROM {t} WHERE job = $1)`

	// pruneMark finds the newest record pruning removes; pruneWater
	// raises the job's watermark to it, before pruneDel deletes: a slot at
	// or before the watermark can no longer be claimed.
	pruneMarkSQL  = `SELECT MAX(due) FROM (` + doomedSQL + `) d`
	pruneWaterSQL = `INSERT INTO {t}_jobs (job, pruned_until) VALUES ($1, $2)
ON CONFLICT (job) DO UPDATE SET pruned_until = CASE
	WHEN excluded.pruned_until > {t}_jobs.pruned_until THEN excluded.pruned_until
	ELSE {t}_jobs.pruned_until END`
	pruneDelSQL = `DELETE FROM {t} WHERE job = $1 AND status <> 0 AND due <= $6 AND due IN (` + doomedSQL + `)`
)

// The statements of schema version 2.
const (
	// since records $2 as the time job $1 has been scheduled since, unless
	// an earlier one is recorded, and returns the earliest.
	sinceSQL = `INSERT INTO {t}_since (job, since) VALUES ($1, $2)
ON CONFLICT (job) DO UPDATE SET since = CASE
	WHEN excluded.since < {t}_since.since THEN excluded.since
	ELSE {t}_since.since END
RETURNING since`

	// retry hands the running claim (node, attempt) of a slot to its next
	// attempt, for the same node, with a fresh lease of $8 microseconds,
	// keeping the failed attempt's Err until the next attempt's outcome;
	// not a claim put out of its job's lane (renewSQL).
	retrySQL = `UPDATE {t} SET attempt = attempt + 1, reason = $5, start_ns = $6, end_ns = NULL, err = $7,
	lease_until = {now} + $8
WHERE job = $1 AND due = $2 AND node = $3 AND attempt = $4 AND status = 0 AND released = 0
	AND (lane IS NULL OR lane <> 1)`
)

var dollarParam = regexp.MustCompile(`\$([0-9]+)`)

func buildQueries(d Dialect, table string) queries {
	q := queries{dialect: d, table: table}
	return q.build()
}

// rewrite replaces {t}, {now} and {skiplocked} in s, and on SQLite spells
// its parameters ?n.
func (q queries) rewrite(s string) string {
	r := strings.NewReplacer("{t}", q.table, "{now}", nowSQL(q.dialect), "{skiplocked}", skipLockedSQL(q.dialect))
	s = r.Replace(s)
	if q.dialect == SQLite {
		s = dollarParam.ReplaceAllString(s, "?$1")
	}
	return s
}

func (qs queries) build() queries {
	q := qs.rewrite
	return queries{
		dialect:     qs.dialect,
		table:       qs.table,
		claim:       q(claimSQL),
		adopt:       q(adoptSQL),
		expired:     q(expiredSQL),
		pruned:      q(prunedSQL),
		unclaim:     q(unclaimSQL),
		finish:      q(finishSQL),
		last:        q(lastSQL),
		history:     q(historySQL),
		renew:       q(renewSQL),
		reclaim:     q(reclaimRunSQL),
		expiredJobs: q(expiredJobsSQL),
		pruneMark:   q(pruneMarkSQL),
		pruneWater:  q(pruneWaterSQL),
		pruneDel:    q(pruneDelSQL),
		since:       q(sinceSQL),
		retry:       q(retrySQL),
		closeAsked:  q(closeAskedSQL),
		takeable:    q(takeableSQL),
		release:     q(releaseSQL),
		lockJob:     q(lockJobSQL),
		lockJobRow:  q(lockJobRowSQL),
		heartbeat:   q(heartbeatSQL),
		nodes:       q(nodesSQL),
		forgetNodes: q(forgetNodesSQL),
		again:       q(againSQL),
		againable:   q(againableSQL),
		unlane:      q(unlaneJobSQL),
	}
}

// nowSQL is the database's clock in Unix microseconds. SQLite's is the
// clock of the machine that runs it, to the millisecond; julianday works on
// every SQLite 3.
func nowSQL(d Dialect) string {
	if d == PostgreSQL {
		return "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)"
	}
	return "CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)"
}

func skipLockedSQL(d Dialect) string {
	if d == PostgreSQL {
		return "FOR UPDATE SKIP LOCKED"
	}
	return ""
}
