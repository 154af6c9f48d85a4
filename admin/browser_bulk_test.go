package admin_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// TestBrowserBulkAndBackfill drives, in a real browser, a bulk pause of
// every task a filter matches, a thousand of them, through its
// confirmation page; and the backfill form of a task, whose slots of the
// last three days then run, and whose progress the page shows.
func TestBrowserBulkAndBackfill(t *testing.T) {
	path := chromium(t)
	defs := make([]cron.Task, 0, 1001)
	for i := range 1000 {
		defs = append(defs, task(fmt.Sprintf("t-%04d", i)))
	}
	defs = append(defs, cron.Task{Name: "other", Handler: "fail", Spec: "0 9 * * *", Permanent: true})
	f := newFixture(t, nil, defs...)
	defer f.stop()
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	base := srv.URL + "/jobs/"

	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1280, 860))...)
	defer cancel()
	ctx, cancelTab := chromedp.NewContext(alloc)
	defer cancelTab()
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelTime()

	// Every task of the handler "ok": the filter, its box, the
	// confirmation, and only then the pause.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"?handler=ok"), chromedp.WaitVisible(chromedp.CSS("table.jobs tbody tr")),
		chromedp.Click(chromedp.ID("bulk-all")), chromedp.Click(chromedp.CSS(`#bulk button[value="pause"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action="bulk"] button.primary`))))
	text, err := textOf(ctx, "main")
	require.NoError(t, err)
	assert.Contains(t, text, "Pause 1000 tasks and jobs?")
	assert.Zero(t, paused(f), "paused before the confirmation")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`form[action="bulk"] button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(".flash"))))
	assert.Equal(t, 1000, paused(f))
	assert.False(t, f.tasks()["other"].Task.Paused, "not of the filter")

	// The backfill of "other", from three days ago to now, in its zone
	// (UTC): its 09:00 slots run, oldest first, and the page says so.
	from := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Hour)
	to := time.Now().UTC().Truncate(time.Second)
	n := strconv.Itoa(count(t, from, to))
	require.NotEqual(t, "0", n)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"task?name=other"), chromedp.WaitVisible(chromedp.CSS("form.backfill")),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("from").value = "`+from.Format("2006-01-02T15:04:05")+`"`),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("to").value = "`+to.Format("2006-01-02T15:04:05")+`"`),
		chromedp.Click(chromedp.CSS(`form.backfill button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS(".flash"))))
	until(t, ctx, `document.querySelector("p.backfill") && document.querySelector("p.backfill").textContent.includes("`+n+` of `+n+` slots handled")`)
	until(t, ctx, `[...document.querySelectorAll("table.history tbody tr")].filter(r => r.textContent.includes("Backfill")).length === `+n)
}

// count returns the slots of "0 9 * * *" in UTC in [from, to).
func count(t *testing.T, from, to time.Time) int {
	t.Helper()
	n := 0
	for _, s := range schedule.Upcoming(mustParse(t, "0 9 * * *"), from.Add(-time.Nanosecond), 10) {
		if s.Before(to) {
			n++
		}
	}
	return n
}

// mustParse parses spec in UTC.
func mustParse(t *testing.T, spec string) schedule.Schedule {
	t.Helper()
	s, err := cron.Parse(spec, time.UTC)
	require.NoError(t, err)
	return s
}
