package sqlstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The statements of CreateMany and Import take a thousand definitions, or
// names, as one JSON array in $1, as a batch takes its records: one
// parameter whatever their number, so that no dialect's limit on
// parameters applies, and the statement is the same for each thousand.
// (modernc.org/sqlite binds numbered parameters in a time quadratic in
// their number: a VALUES of a thousand definitions, 22,000 parameters,
// took 6.9 s to bind; DESIGN.md.)

// bulkRows is the most definitions, or names, a statement of CreateMany
// or Import carries.
const bulkRows = 1000

// rowColumns are the columns of a definition that rowArgs returns, in its
// order, and their types on PostgreSQL.
var rowColumns = [...]struct{ name, pgType string }{
	{"name", "text"}, {"handler", "text"}, {"business_id", "text"}, {"spec", "text"}, {"zone", "text"},
	{"start_at", "timestamptz"}, {"end_at", "timestamptz"}, {"permanent", "boolean"}, {"once", "boolean"},
	{"paused", "boolean"}, {"overlap", "text"}, {"misfire", "text"}, {"timeout", "text"},
	{"retry_attempts", "integer"}, {"retry_backoff", "text"}, {"catch_up_window", "text"},
	{"max_runs", "bigint"}, {"jitter", "text"}, {"pause_note", "text"}, {"paused_until", "timestamptz"},
	{"pause_on_failures", "integer"}, {"calendars", "text"},
}

// definitionsSQL is the table b of the JSON definitions in $1, one column
// for each of rowColumns.
func definitionsSQL(d Dialect) string {
	var b strings.Builder
	if d == PostgreSQL {
		b.WriteString("json_to_recordset(CAST($1 AS json)) AS b(")
		for i, c := range rowColumns {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c.name + " " + c.pgType)
		}
		b.WriteString(")")
		return b.String()
	}
	b.WriteString("(SELECT ")
	for i, c := range rowColumns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("value->>'" + c.name + "' AS " + c.name)
	}
	b.WriteString(" FROM json_each($1)) AS b")
	return b.String()
}

// The statements, with {defs} for the definitions of $1, {names} for the
// names of $1, and {t} as in the others.
const (
	// insertManySQL inserts the definitions of $1 at version 1, written
	// at $2, and returns the names it inserted: a name defined already is
	// left as it is. (The WHERE makes SQLite read ON CONFLICT as the
	// upsert's, not the join's.)
	insertManySQL = `INSERT INTO {t}_tasks (` + taskColumns + `)
SELECT b.name, b.handler, b.business_id, b.spec, b.zone, b.start_at, b.end_at, b.permanent, b.once, b.paused,
	b.overlap, b.misfire, b.timeout, b.retry_attempts, b.retry_backoff, 1, CAST($2 AS {time}), CAST($2 AS {time}),
	b.catch_up_window, b.max_runs, b.jitter, b.pause_note, b.paused_until, b.pause_on_failures, b.calendars
FROM {defs} WHERE true
ON CONFLICT (name) DO NOTHING
RETURNING name`
	// calendarNamesSQL reads the names of the calendars.
	calendarNamesSQL = `SELECT name FROM {t}_calendars`
	// getTasksSQL reads the definitions of the names of $1.
	getTasksSQL = `SELECT ` + taskColumns + ` FROM {t}_tasks WHERE name IN ({names})`
	// deleteTasksSQL and deleteSincesSQL delete the definitions of the
	// names of $1, and since when their jobs have been scheduled.
	deleteTasksSQL  = `DELETE FROM {t}_tasks WHERE name IN ({names})`
	deleteSincesSQL = `DELETE FROM {t}_since WHERE job IN ({names})`
)

// upsertManySQL is insertManySQL replacing a definition of the name,
// keeping its creation, at its version plus one, and returning nothing.
var upsertManySQL = func() string {
	s, ok := strings.CutSuffix(insertManySQL, "ON CONFLICT (name) DO NOTHING\nRETURNING name")
	if !ok {
		panic("sqlstore: insertManySQL does not end as upsertManySQL expects")
	}
	var sets []string
	for c := range strings.SplitSeq(taskColumns, ",") {
		c = strings.TrimSpace(c)
		if c != "name" && c != "version" && c != "created_at" {
			sets = append(sets, c+" = excluded."+c)
		}
	}
	return s + "ON CONFLICT (name) DO UPDATE SET " + strings.Join(sets, ", ") + ", version = {t}_tasks.version + 1"
}()

// bulkQueries holds the statements of CreateMany and Import, for a
// dialect and table.
type bulkQueries struct {
	insert, upsert, calendars, get, delete, deleteSince string
}

func newBulkQueries(q queries) bulkQueries {
	time := "TIMESTAMPTZ"
	if q.dialect == SQLite {
		time = "TEXT"
	}
	r := strings.NewReplacer("{defs}", definitionsSQL(q.dialect), "{names}", jobsSQL(q.dialect), "{time}", time)
	f := func(s string) string { return q.rewrite(r.Replace(s)) }
	return bulkQueries{
		insert:      f(insertManySQL),
		upsert:      f(upsertManySQL),
		calendars:   f(calendarNamesSQL),
		get:         f(getTasksSQL),
		delete:      f(deleteTasksSQL),
		deleteSince: f(deleteSincesSQL),
	}
}

// appendDefinitions appends the JSON array of the definitions rows[i],
// for each i of which, each a rowArgs, to buf.
func appendDefinitions(buf []byte, rows [][]any, which []int) []byte {
	buf = append(buf, '[')
	for n, i := range which {
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '{')
		for k, v := range rows[i] {
			if k > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, '"')
			buf = append(buf, rowColumns[k].name...)
			buf = append(buf, `":`...)
			buf = appendJSONValue(buf, v)
		}
		buf = append(buf, '}')
	}
	return append(buf, ']')
}

// appendJSONValue appends v, a parameter of rowArgs, as JSON: a time as
// text in sqliteTime's layout, which both dialects read.
func appendJSONValue(buf []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(buf, "null"...)
	case string:
		return appendJSONString(buf, v)
	case bool:
		return strconv.AppendBool(buf, v)
	case int:
		return strconv.AppendInt(buf, int64(v), 10)
	case int64:
		return strconv.AppendInt(buf, v, 10)
	case time.Time:
		return appendJSONString(buf, v.UTC().Format(sqliteTime))
	}
	panic(fmt.Sprintf("sqlstore: a definition's column holds a %T", v))
}

// appendNames appends the JSON array of names to buf.
func appendNames(buf []byte, names []string) []byte {
	buf = append(buf, '[')
	for i, n := range names {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, n)
	}
	return append(buf, ']')
}

// clipText returns s, cut to 64 bytes with "..." if longer, as valid
// UTF-8, for an error message.
func clipText(s string) string {
	if len(s) <= 64 {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ToValidUTF8(s[:64], "") + "..."
}
