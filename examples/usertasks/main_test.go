package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/examples/internal/cmdtest"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

func TestMain(m *testing.M) {
	cmdtest.RunMainIfChild(main)
	goleak.VerifyTestMain(m)
}

var update = flag.Bool("update", false, "rewrite testdata/story.golden with the story as told")

// tell tells the whole story in the test's synctest bubble, where time is
// fake and exact: it starts at a whole second, and stands still while
// SQLite reads and writes the file, so that every time printed is the
// same at each run, whatever the machine's load.
func tell(t *testing.T, cfg config) (*report, string) {
	t.Helper()
	var out bytes.Buffer
	r, err := run(context.Background(), &out, cfg)
	require.NoError(t, err, out.String())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the story as told:\n%s", out.String())
		}
	})
	return r, out.String()
}

var defaults = config{poll: 250 * time.Millisecond}

// The story is told line by line as testdata/story.golden has it, up to
// the order of the records of runs that end at the same instant, which
// their Observers print in any order.
func TestStory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, out := tell(t, defaults)
		got := normalize(out)
		const golden = "testdata/story.golden"
		if *update {
			require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
		}
		want, err := os.ReadFile(golden)
		require.NoError(t, err)
		assert.Equal(t, string(want), got)
	})
}

// observed matches a line of the story that an Observer printed, and
// its time.
var observed = regexp.MustCompile(`^ *(\d+\.\d\d)s  \S+ +slot `)

// normalize sorts by their text the records printed at the same instant
// one after the other.
func normalize(out string) string {
	lines := slices.Collect(strings.Lines(out))
	at := func(line string) string {
		if m := observed.FindStringSubmatch(line); m != nil {
			return m[1]
		}
		return ""
	}
	for i := 0; i < len(lines); {
		j := i + 1
		for at(lines[i]) != "" && j < len(lines) && at(lines[j]) == at(lines[i]) {
			j++
		}
		slices.Sort(lines[i:j])
		i = j
	}
	return strings.Join(lines, "")
}

// recordsOf returns the records of the task name that the Observers got, in
// order.
func recordsOf(r *report, name string) []schedule.Record {
	var rs []schedule.Record
	for _, rec := range r.records {
		if rec.Job == name {
			rs = append(rs, rec)
		}
	}
	return rs
}

// at returns the time d into the story.
func (r *report) at(d time.Duration) time.Time { return r.start.Add(d).UTC() }

// Each change is applied, and the tasks run as the definitions in force
// say, slot by slot.
func TestStoryChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := tell(t, defaults)
		require.Empty(t, r.errs, "the Table refused no definition it read")

		require.Len(t, r.refused, 2)
		var bad *cron.TaskError
		require.ErrorAs(t, r.refused[0], &bad)
		assert.Equal(t, "retries", bad.Field, "DecodeTasks names the unknown field")
		require.ErrorAs(t, r.refused[1], &bad)
		assert.Equal(t, "spec", bad.Field, "Create refuses February 30")

		// Every change is applied: the admin's at the Table's next look,
		// Pause and Resume at once.
		poll := defaults.poll
		require.Len(t, r.edits, 5)
		for _, e := range r.edits {
			if strings.HasPrefix(e.what, "admin:") {
				assert.Greater(t, e.after, time.Duration(0), e.what)
				assert.LessOrEqual(t, e.after, poll+5*time.Millisecond, e.what)
			} else {
				assert.Zero(t, e.after, e.what)
			}
		}

		dues := func(name string, s schedule.Status) []time.Duration {
			var ds []time.Duration
			for _, rec := range recordsOf(r, name) {
				if rec.Status == s {
					ds = append(ds, rec.Due.Sub(r.start))
				}
			}
			return ds
		}
		sec := func(s ...int) []time.Duration {
			var ds []time.Duration
			for _, n := range s {
				ds = append(ds, time.Duration(n)*time.Second)
			}
			return ds
		}
		// Every second, then every 3 from updateAt; 5s, missed while the
		// service was down, is caught up.
		assert.Equal(t, sec(1, 2, 3, 6), dues("report-shop-1", schedule.Succeeded))
		// Paused over 3s; 5s passes while the service is down and is
		// Missed: the run at the restart is 6s's, on time.
		assert.Equal(t, sec(1, 2, 4, 6), dues("report-shop-2", schedule.Succeeded))
		assert.Equal(t, sec(5), dues("report-shop-2", schedule.Missed))
		// The retry recovers the failed first attempt, within the slot.
		assert.Equal(t, []schedule.Record{
			{Job: "report-shop-7", Due: r.at(2 * time.Second), Status: schedule.Failed, Attempt: 1, Err: "shop-7: database is waking up"},
			{Job: "report-shop-7", Due: r.at(2 * time.Second), Status: schedule.Succeeded, Attempt: 2},
			{Job: "report-shop-7", Due: r.at(4 * time.Second), Status: schedule.Succeeded, Attempt: 1},
			{Job: "report-shop-7", Due: r.at(6 * time.Second), Status: schedule.Succeeded, Attempt: 1},
		}, outcomes(recordsOf(r, "report-shop-7")))
		// The timeout cuts each run short; deleted at deleteAt, it has no
		// slot after.
		assert.Equal(t, sec(2), dues("report-shop-9", schedule.Failed))
		assert.Len(t, recordsOf(r, "report-shop-9"), 1)
		for _, rec := range recordsOf(r, "report-shop-9") {
			assert.Equal(t, 300*time.Millisecond, rec.End.Sub(rec.Start))
			assert.Contains(t, rec.Err, "context deadline exceeded")
		}
		// Once, at the first second after it was added; and the one added
		// while the service was down, at its restart.
		assert.Equal(t, sec(3), dues("report-shop-4-first", schedule.Succeeded))
		late := recordsOf(r, "report-shop-5-first")
		require.Len(t, late, 1)
		assert.Equal(t, 5*time.Second, late[0].Due.Sub(r.start))
		assert.Equal(t, schedule.CatchUp, late[0].Reason)
		assert.Equal(t, 5*time.Second+restartAfter, late[0].Start.Sub(r.start), "at the restart")
		// RunNow, once.
		weekly := recordsOf(r, "report-weekly")
		require.Len(t, weekly, 1)
		assert.Equal(t, schedule.Manual, weekly[0].Reason)
		assert.Equal(t, runNowAt, weekly[0].Due.Sub(r.start))

		assert.Equal(t, []int{11, 5}, r.rows, "the records printed from the view")
	})
}

// outcomes returns rs with what a test can compare: their task, slot,
// status, attempt and error.
func outcomes(rs []schedule.Record) []schedule.Record {
	out := make([]schedule.Record, len(rs))
	for i, r := range rs {
		out[i] = schedule.Record{Job: r.Job, Due: r.Due.UTC(), Status: r.Status, Attempt: r.Attempt, Err: r.Err}
	}
	return out
}

// The inventory lists what the Table runs, with the definitions in force.
func TestStoryInventory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := tell(t, defaults)
		require.Len(t, r.inventory, 2)
		type row struct {
			name, spec string
			next       time.Duration // from the story's 0s; -1 for none
			last       schedule.Status
			lastDue    time.Duration // from the story's 0s; -1 for none
		}
		rows := func(ts []cron.TaskState) []row {
			var out []row
			for _, s := range ts {
				next := time.Duration(-1)
				if !s.Next.IsZero() && s.Next.Sub(r.start) < time.Hour {
					next = s.Next.Sub(r.start)
				}
				last := row{s.Task.Name, s.Task.Spec, next, s.Last.Status, s.Last.Due.Sub(r.start)}
				if s.Last.Due.IsZero() {
					last.last, last.lastDue = 0, -1
				}
				out = append(out, last)
				assert.Zero(t, s.Running, s.Task.Name)
			}
			return out
		}
		assert.Equal(t, []row{
			{"report-shop-1", "* * * * * *", 3 * time.Second, schedule.Succeeded, 2 * time.Second},
			{"report-shop-2", "* * * * * *", 3 * time.Second, schedule.Succeeded, 2 * time.Second},
			{"report-shop-7", "*/2 * * * * *", 4 * time.Second, schedule.Succeeded, 2 * time.Second},
			{"report-shop-9", "*/2 * * * * *", 4 * time.Second, schedule.Failed, 2 * time.Second},
			{"report-weekly", "0 9 * * MON", -1, 0, -1},
		}, rows(r.inventory[0]))
		assert.Equal(t, []row{
			{"report-shop-1", "*/3 * * * * *", 6 * time.Second, schedule.Succeeded, 3 * time.Second},
			{"report-shop-2", "* * * * * *", 5 * time.Second, schedule.Succeeded, 4 * time.Second},
			{"report-shop-4-first", "* * * * * *", -1, schedule.Succeeded, 3 * time.Second},
			{"report-shop-7", "*/2 * * * * *", 6 * time.Second, schedule.Succeeded, 4 * time.Second},
			{"report-weekly", "0 9 * * MON", -1, schedule.Succeeded, runNowAt},
		}, rows(r.inventory[1]))
		weekly := r.inventory[1][4]
		assert.Equal(t, "Asia/Tokyo", weekly.Task.Zone)
		assert.Equal(t, time.Monday, weekly.Next.In(time.UTC).Weekday(), "09:00 in Tokyo is 00:00 UTC, the same day")
	})
}

// The definitions given with -tasks are seeded beside the story's, and
// run; one that names a task of the story is refused.
func TestMoreTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		more, err := cron.DecodeTasks(strings.NewReader(`[
			{"name": "report-shop-8", "handler": "report", "businessId": "shop-8", "spec": "*/4 * * * * *", "permanent": true},
			{"name": "report-shop-1", "handler": "report", "spec": "@hourly", "permanent": true}]`))
		require.NoError(t, err)
		r, out := tell(t, config{poll: defaults.poll, tasks: more})
		require.Len(t, r.refused, 3)
		assert.ErrorIs(t, r.refused[1], sqlstore.ErrTaskExists)
		assert.Contains(t, out, "saved report-shop-8: Every 4 seconds (version 1)\n")
		var dues []time.Duration
		for _, rec := range recordsOf(r, "report-shop-8") {
			dues = append(dues, rec.Due.Sub(r.start))
		}
		assert.Equal(t, []time.Duration{4 * time.Second}, dues)
	})
}

// The real program, on the real clock, makes every change, applies it and
// saves it in the file -db names. How soon each is applied is TestStory's
// to check, on the fake clock: on the real one a busy machine decides it.
func TestRunsFromTheCommandLine(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tasks.db")
	stdout, stderr, code := cmdtest.Run(t, "-db", db)
	require.Equal(t, 0, code, "stderr: %s\nstdout: %s", stderr, stdout)
	for _, want := range []string{
		`refused, "retries": 3 for "retry": {"attempts": 3}: cron: task "report-shop-3" at index 0: retries: unknown field`,
		`refused: cron: task "report-leap-day": spec: no time in the next 100 years`,
		"report-shop-9 is gone",
		"the service starts again",
	} {
		assert.Contains(t, stdout, want)
	}
	applied := regexp.MustCompile(`applied (\S+) later`).FindAllStringSubmatch(stdout, -1)
	assert.Len(t, applied, 5, stdout)
	for _, m := range applied {
		d, err := time.ParseDuration(m[1])
		require.NoError(t, err)
		assert.GreaterOrEqual(t, d, time.Duration(0), "applied before it was made")
	}
	assert.Regexp(t, `report-shop-5-first +slot \d+s +Succeeded \(CatchUp\)`, stdout)

	// The database holds the definitions as the story left them.
	sdb, err := sqlstore.OpenSQLite(db)
	require.NoError(t, err)
	defer sdb.Close()
	s, err := sqlstore.New(context.Background(), sdb, sqlstore.SQLite)
	require.NoError(t, err)
	defs, err := s.Definitions().List(context.Background())
	require.NoError(t, err)
	got := map[string]string{}
	for _, d := range defs {
		got[d.Task.Name] = d.Task.Spec
		assert.False(t, d.Task.Paused, d.Task.Name)
	}
	assert.Equal(t, map[string]string{
		"report-shop-1":       "*/3 * * * * *",
		"report-shop-2":       "* * * * * *",
		"report-shop-4-first": "* * * * * *",
		"report-shop-5-first": "* * * * * *",
		"report-shop-7":       "*/2 * * * * *",
		"report-weekly":       "0 9 * * MON",
	}, got)
}

func TestBadInputExitsWithStatus2(t *testing.T) {
	cmdtest.BadInput{
		"-poll 0":                    "usertasks: -poll must be between 50ms and 500ms, got 0s (see -h)",
		"-poll 5s":                   "usertasks: -poll must be between 50ms and 500ms, got 5s (see -h)",
		"-poll soon":                 "usertasks: invalid value \"soon\" for flag -poll: parse error (see -h)",
		"-speed 2":                   "usertasks: flag provided but not defined: -speed (see -h)",
		"now":                        "usertasks: unexpected argument \"now\" (see -h)",
		"-db tasks.json":             "usertasks: -db tasks.json: the file exists; name a new one (see -h)",
		"-tasks testdata/none.json":  "usertasks: -tasks: open testdata/none.json: no such file or directory (see -h)",
		"-tasks testdata/typo.json":  "usertasks: -tasks testdata/typo.json: cron: task \"report-shop-3\" at index 0: enabled: unknown field (see -h)",
		"-tasks testdata/twice.json": "usertasks: -tasks testdata/twice.json: cron: task \"report-shop-3\" at index 0: spec: given twice (see -h)",
	}.Check(t)
}

func TestHelp(t *testing.T) {
	stdout, stderr, code := cmdtest.Run(t, "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "-poll d")
	assert.Contains(t, stderr, "-db file")
	assert.Empty(t, stdout)
}
