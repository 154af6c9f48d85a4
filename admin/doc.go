// Package admin serves a web page for the scheduled jobs of a service:
// the tasks of a cron.Table and any schedule.Jobs, each with its schedule
// in words and as typed, its zone, its next run, its last outcome, whether
// it runs now or is paused; above them, an overview: how many are failing,
// late, running, paused, never run or refused, each a link to the list of
// them, the nodes (Options.Nodes), and a chart of the runs of the last 24
// hours by hour and outcome, drawn by the server; a job's next 10 runs and
// its history, paged; run now, pause and resume, of one or of many at
// once (those ticked, or all a filter matches); and, for a Table that
// follows a Source of definitions, their creation, edit and deletion, with
// the spec checked and previewed by the server as it is typed and a stale
// edit refused; and the calendars whose days tasks pass over
// (Options.Calendars), listed and edited, a task's next runs and previews
// passing over their days.
//
//	h := admin.New(admin.Options{Table: table, Jobs: []*schedule.Job{report}, Store: store,
//		Definitions: store.Definitions(), // *sqlstore.Definitions, the Source the Table follows
//		Authorize: func(r *http.Request) bool { return userOf(r).IsAdmin() }})
//	mux.Handle("/jobs/", http.StripPrefix("/jobs", h))
//
// The handler is safe by default. Every write is refused unless Authorize
// allows it, and without Authorize the page is read-only; a browser's
// write from another origin is refused (http.CrossOriginProtection); every
// text from users (names, specs, errors) is escaped by html/template; its
// script and style are files of the handler, and its pages forbid any
// other (Content-Security-Policy: default-src 'self'). Who the user is,
// the service says, in a middleware before the handler (examples/admin
// uses basic auth). The pages work without JavaScript: forms post and
// redirect. A little script refreshes a page every few seconds (Refresh)
// and previews a spec as it is typed.
//
// Its links and redirects are relative, so that it works under any prefix
// that http.StripPrefix removes. Times are shown in each job's zone (its
// CRON_TZ, its task's Zone, or Location), with UTC on hover.
//
// # Routes
//
// The paths are relative to where the handler is mounted. A name is
// passed as name=, never in the path, so that any task name works.
//
//	GET  /                      the overview and the list: q= searches names (any case),
//	                            state= (failing, late, running, paused, never, refused),
//	                            handler=, business=, zone= filter it; page= from 1
//	GET  /task?name=&page=      a task's page: its next runs, definition, history page
//	GET  /job?name=&page=       the page of one of Options.Jobs
//	GET  /new, /edit?name=      the forms of a definition (Definitions, Authorize)
//	POST /run, /pause, /resume  kind=task or job, name=; redirect to the page;
//	                            a pause takes note= and for= (a duration such as 2h)
//	POST /bulk                  do= (run, pause or resume) of sel= (task:NAME or job:NAME,
//	                            repeated), or, with all= set, of every task and job the filter
//	                            (q=, state=, handler=, business=, zone=) matches; note= and
//	                            for= for a pause. Without confirm=1 a page that says what
//	                            will change, and changes nothing; with it, each is acted on
//	                            as by the single action, and a page says what failed and why.
//	                            At most MaxBulk; with all=, count= the number confirmed
//	POST /backfill              kind=task, name=, from=, to= (times in the task's
//	                            zone): its slots in the range run on this replica;
//	                            with again= set, those with a record run again too
//	POST /cancel-backfill       kind=task, name=
//	POST /create, /update       a definition's form, with version= for update
//	POST /delete                name=, version=
//	GET  /calendars             the calendars (Calendars): name, zone, days, note
//	GET  /new-calendar, /edit-calendar?name=  the forms of a calendar (Calendars, Authorize)
//	POST /create-calendar, /update-calendar   a calendar's form, with version= for update
//	POST /delete-calendar       name=, version=; refused while a task names it
//	GET  /audit?name=&before=   the audit log (Audit): who did what, when, newest first; of one
//	                            task, job or calendar with name=, older than the id before=
//	GET  /static/{file}         the page's CSS and script
//
// The same data as JSON, for scripts:
//
//	GET  /api/tasks?q=&page=    {"query", "page", "pages", "pageSize", "total", "asOf", "items": [row]},
//	                            and the filters of the list, as "state", "handler", "businessId", "zone"
//	GET  /api/overview          {"asOf", "total", "counts": [{"state", "count", "url"}], "nodes": [Node],
//	                            "nodesError", "chart": {"from", "step", "outcomes", "hours": [{"start",
//	                            "counts"}], "totals"}, "warning"}
//	GET  /api/task?name=&page=  row and {"definition", "loaded", "upcoming", "history": [record], "page", "more",
//	                            "remaining" (with MaxRuns), "backfill" (the latest on this replica)}
//	GET  /api/job?name=&page=   the same, for a Job
//	GET  /api/definition?name=  {"task": cron.Task, "version"}
//	GET  /api/preview?spec=&zone=&calendars=  {"spec", "zone", "description", "next", "nextText"}, or 422 and "error", "field"
//	GET  /api/calendars         {"calendars": [cron.Calendar]}
//	GET  /api/audit?name=&before=  {"name", "entries": [cron.AuditEntry], "before" (of the older page, if any)}
//	POST /api/run, /api/pause, /api/resume, /api/backfill, /api/cancel-backfill
//	                            as the forms; {"kind", "name", "done"}, and "audit" if the change
//	                            was made but its entry not written to the audit log
//	POST /api/bulk              as the form; without confirm=1 {"do", "count", "all", "items":
//	                            [{"kind", "name"}]}, and with it {"do", "done": n, "failed":
//	                            [{"kind", "name", "error"}]}; 422 above MaxBulk, 409 if
//	                            the filter matches another count= than was confirmed
//	POST /api/create            {"task": cron.Task}; {"kind", "name", "done", "version"}
//	POST /api/update            {"task": cron.Task, "version": n}; the same
//	POST /api/delete            name=, version=; {"kind", "name", "done"}
//
// A row is {"kind", "name", "spec", "description", "zone", "next", "last":
// record, "running", "paused", "handler", "businessId"}; a record is
// {"due", "status", "reason", "attempt", "node", "start", "end",
// "duration", "error"}. Times are RFC 3339, in the job's zone. An error
// is {"error", "field"} with its status: 400 for a request that does not
// read, 403 for a write refused, 404 for an unknown name, 409 for a stale
// version, a name taken or a paused task run, 422 for a definition
// refused, with its field named as in a cron.Task's JSON.
//
// With 100,000 tasks, a page of the list is served in a few milliseconds:
// it pages and searches a snapshot of the tasks' names, read at most once
// a second, and again after a write through the page (SnapshotAge), and
// reads the state of its own rows only, in one call of the Store. The
// overview counts a census of every task's state, read at most once per
// OverviewAge (5s), in the background while it is not older than twice
// that, and again after a write: a late
// task is one that is neither paused nor running whose next slot fell
// due more than a minute ago. DESIGN.md has the figures and how they were
// measured.
package admin
