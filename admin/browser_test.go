package admin_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/admin"
	"github.com/circulation-go/circulation/cron"
)

var screenshots = flag.Bool("screenshots", false, "write the screenshots of TestBrowser to testdata/screenshots, for the README")

// chromium returns the path of a Chromium or Chrome to drive: Debian's
// chromium package, which .ci/run installs. Without one, the test is
// skipped, but under CI, where it fails.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium to drive: apt-get install chromium")
	}
	t.Skip("no chromium to drive (apt-get install chromium); the browser tests are skipped")
	return ""
}

// browserTasks are the tasks of the browser's service: what the
// screenshots show.
func browserTasks() []cron.Task {
	return []cron.Task{
		{Name: "shop-1 daily report", Handler: "slow", BusinessID: "shop-1", Spec: "0 9 * * 1-5", Zone: "Europe/Paris", Permanent: true},
		{Name: "shop-2 stock export", Handler: "fail", BusinessID: "shop-2", Spec: "*/15 8-18 * * *", Zone: "America/New_York",
			Permanent: true, Timeout: cron.Duration(time.Minute)},
		{Name: "shop-3 weekly digest", Handler: "ok", BusinessID: "shop-3", Spec: "0 8 * * MON", Zone: "Asia/Tokyo", Permanent: true},
		{Name: "nightly cleanup", Handler: "ok", Spec: "30 2 * * *", Zone: "America/New_York", Permanent: true, Paused: true},
		{Name: "invoice reminders", Handler: "ok", Spec: "0 10 1 * *", Zone: "Europe/London", Permanent: true, Overlap: "buffer-one",
			Retry: cron.Retry{Attempts: 3, Backoff: cron.Duration(time.Minute)}},
	}
}

// TestBrowser drives the page in a real browser: it opens the list, runs
// a task now and sees its record appear, pauses and resumes one, edits a
// spec and sees the preview, and takes screenshots on the way.
func TestBrowser(t *testing.T) {
	path := chromium(t)
	audit := new(memAudit)
	f := newFixture(t, func(o *admin.Options) {
		o.Refresh = 300 * time.Millisecond
		o.SnapshotAge = 200 * time.Millisecond
		o.Title = "Shop jobs"
		o.Audit = audit
		o.User = func(*http.Request) string { return "operator" }
	}, browserTasks()...)
	defer f.stop()
	for _, name := range []string{"shop-2 stock export", "shop-3 weekly digest"} {
		require.NoError(t, f.table.RunNow(name))
	}
	f.job.RunNow()
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	base := srv.URL + "/jobs/"

	shots := t.TempDir()
	if *screenshots {
		shots = filepath.Join("testdata", "screenshots")
		require.NoError(t, os.MkdirAll(shots, 0o755))
	}

	// One browser for every step, a tab each; generous waits, for a
	// loaded machine.
	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1280, 860))...)
	defer cancel()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	require.NoError(t, chromedp.Do(browser), "starting %s", path)

	// tab opens a tab, and returns a context for its actions that ends
	// after a minute.
	tab := func(t *testing.T) context.Context {
		ctx, cancel := chromedp.NewContext(browser)
		t.Cleanup(cancel)
		require.NoError(t, chromedp.Do(ctx))
		tctx, tcancel := context.WithTimeout(ctx, time.Minute)
		t.Cleanup(tcancel)
		return tctx
	}
	shoot := func(t *testing.T, ctx context.Context, name string) {
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(shots, name), png, 0o644))
	}

	// retype empties the input id, then types text into it, key by key.
	retype := func(t *testing.T, ctx context.Context, id, text string) {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx,
			chromedp.Evaluate[chromedp.Void](`document.getElementById("`+id+`").value = ""`),
			chromedp.SendKeys(chromedp.ID(id), text)))
	}

	t.Run("list", func(t *testing.T) {
		ctx := tab(t)
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base),
			chromedp.WaitVisible(chromedp.CSS("table.jobs tbody tr"))))
		until(t, ctx, `document.querySelectorAll("table.jobs .s-failed").length > 0`)
		text, err := textOf(ctx, "table.jobs")
		require.NoError(t, err)
		for _, want := range []string{"shop-1 daily report", "At 09:00 in Europe/Paris, Monday through Friday", "0 9 * * 1-5",
			"nightly cleanup", "paused", "report", "Succeeded", "Failed"} {
			assert.Contains(t, text, want)
		}
		shoot(t, ctx, "list.png")

		// The search, with the keyboard.
		require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("q"), "shop\n"),
			chromedp.WaitVisible(chromedp.CSS(`form.search a`)))) // Clear, on the results only
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("table.jobs tbody tr").length`))
		require.NoError(t, err)
		assert.Equal(t, 3, n)

		// A phone, 360 pixels wide: a row a task, not a card; its
		// error in words, not a tooltip.
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(360, 780), chromedp.Navigate(base),
			chromedp.WaitVisible(chromedp.CSS("table.jobs tbody tr"))))
		wide, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		require.NoError(t, err)
		assert.LessOrEqual(t, wide, 360, "no sideways scrolling on a phone")
		tallest, err := chromedp.Run(ctx, chromedp.Evaluate[float64](
			`Math.max(...[...document.querySelectorAll("table.jobs tbody tr")].map(r => r.getBoundingClientRect().height))`))
		require.NoError(t, err)
		assert.Less(t, tallest, 130.0, "the tallest row, in pixels: six or more rows a screen")
		require.NoError(t, chromedp.Do(ctx, chromedp.ScrollIntoView(chromedp.CSS("table.jobs"))))
		visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
			`[...document.querySelectorAll("table.jobs .err")].some(e => e.getBoundingClientRect().height > 0 && e.textContent.includes("connection refused"))`))
		require.NoError(t, err)
		assert.True(t, visible, "the failed run's error, on the row")
		shoot(t, ctx, "phone.png")
	})

	t.Run("overview", func(t *testing.T) {
		ctx := tab(t)
		// Every script error and every error the console logs (a style or
		// script the page's policy refused would be one), but the favicon
		// the page does not have.
		var errs []string
		var mu sync.Mutex
		require.NoError(t, chromedp.Listen(ctx, func(ev any) {
			mu.Lock()
			defer mu.Unlock()
			switch ev := ev.(type) {
			case *runtime.EventExceptionThrown:
				errs = append(errs, ev.ExceptionDetails.Text)
			case *log.EventEntryAdded:
				if ev.Entry.Level == log.EntryLevelError && !strings.HasSuffix(ev.Entry.URL, "/favicon.ico") {
					errs = append(errs, ev.Entry.Text+" "+ev.Entry.URL)
				}
			}
		}))
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("section.overview svg.runs"))))
		until(t, ctx, `document.querySelector("a.c-failing .n").textContent === "1"`)
		bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg.runs g.hour").length`))
		require.NoError(t, err)
		assert.Equal(t, 24, bars, "a bar an hour")
		label, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("svg.runs title").textContent`))
		require.NoError(t, err)
		assert.Equal(t, "Runs per hour, the last 24 hours, by outcome", label)
		// The failed run's bar is drawn: a shape filled with the failures' pattern, of some height.
		until(t, ctx, `[...document.querySelectorAll('svg.runs rect.o-failed')].some(r => r.getBBox().height > 0)`)
		shoot(t, ctx, "overview.png")

		// A count is a link to the list of those.
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("a.c-failing")),
			chromedp.WaitVisible(chromedp.CSS(`a.c-failing[aria-current="page"]`))))
		until(t, ctx, `document.querySelectorAll("table.jobs tbody tr").length === 1`)
		text, err := textOf(ctx, "table.jobs")
		require.NoError(t, err)
		assert.Contains(t, text, "shop-2 stock export")
		// The page refreshes itself, and the chart with it.
		require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("svg.runs").dataset.old = "1"`)))
		until(t, ctx, `document.querySelector("svg.runs") && !document.querySelector("svg.runs").dataset.old`)
		mu.Lock()
		assert.Empty(t, errs, "errors in the page")
		mu.Unlock()
	})

	t.Run("run now", func(t *testing.T) {
		ctx := tab(t)
		page := base + "task?name=" + urlEscape("shop-1 daily report")
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(".facts"))))
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("table.history tbody tr").length`))
		require.NoError(t, err)
		require.Zero(t, n, "no record yet")
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button[aria-label="Run shop-1 daily report now"]`)),
			chromedp.WaitVisible(chromedp.CSS(".flash"))))
		// The run takes a moment; the page refreshes itself until its
		// record shows its outcome.
		until(t, ctx, `[...document.querySelectorAll("table.history .s-succeeded")].length === 1`)
		text, err := textOf(ctx, "table.history")
		require.NoError(t, err)
		assert.Contains(t, text, "Manual")
		shoot(t, ctx, "task.png")
	})

	t.Run("pause and resume", func(t *testing.T) {
		ctx := tab(t)
		const name = "shop-3 weekly digest"
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base),
			chromedp.Click(chromedp.CSS(`button[aria-label="Pause `+name+`"]`)),
			chromedp.WaitVisible(chromedp.CSS(`button[aria-label="Resume `+name+`"]`))))
		assert.True(t, f.tasks()[name].Task.Paused)
		flash, err := textOf(ctx, ".flash")
		require.NoError(t, err)
		assert.Contains(t, flash, "Paused")
		require.NoError(t, chromedp.Do(ctx,
			chromedp.Click(chromedp.CSS(`button[aria-label="Resume `+name+`"]`)),
			chromedp.WaitVisible(chromedp.CSS(`button[aria-label="Pause `+name+`"]`))))
		assert.False(t, f.tasks()[name].Task.Paused)
	})

	t.Run("bulk", func(t *testing.T) {
		ctx := tab(t)
		// Without script: the boxes, the confirmation and its form are
		// forms only.
		require.NoError(t, chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return err
		})))
		names := []string{"shop-1 daily report", "shop-3 weekly digest"}
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("table.jobs tbody tr")),
			chromedp.Click(chromedp.CSS(`input[name="sel"][value="task:`+names[0]+`"]`)),
			chromedp.Click(chromedp.CSS(`input[name="sel"][value="task:`+names[1]+`"]`)),
			chromedp.Click(chromedp.CSS(`#bulk button[value="pause"]`)),
			chromedp.WaitVisible(chromedp.CSS(`form[action="bulk"] button.primary`))))
		text, err := textOf(ctx, "main")
		require.NoError(t, err)
		assert.Contains(t, text, "Pause 2 tasks and jobs?")
		for _, name := range names {
			assert.Contains(t, text, name)
			assert.False(t, f.tasks()[name].Task.Paused, "%s paused before the confirmation", name)
		}
		shoot(t, ctx, "bulk.png")
		require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("note"), "maintenance"),
			chromedp.Click(chromedp.CSS(`form[action="bulk"] button.primary`)), chromedp.WaitVisible(chromedp.CSS(".flash"))))
		flash, err := textOf(ctx, ".flash")
		require.NoError(t, err)
		assert.Contains(t, flash, "Paused 2")
		for _, name := range names {
			s := f.tasks()[name].Task
			assert.True(t, s.Paused, name)
			assert.Equal(t, "maintenance", s.PauseNote, name)
			require.NoError(t, f.table.Resume(name))
		}
	})

	t.Run("edit", func(t *testing.T) {
		ctx := tab(t)
		const name = "invoice reminders"
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"edit?name="+urlEscape(name)),
			chromedp.WaitVisible(chromedp.ID("spec"))))
		until(t, ctx, `document.getElementById("preview").textContent.includes("on day 1 of the month")`)

		// A spec that does not parse, then one that does: the server
		// previews each as it is typed.
		retype(t, ctx, "spec", "*/15 9-17 * * MON-FRI")
		until(t, ctx, `document.getElementById("preview").textContent.includes("Every 15 minutes")`)
		require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("spec"), "X")))
		until(t, ctx, `document.getElementById("preview").querySelector(".error") !== null`)
		until(t, ctx, `document.getElementById("spec").getAttribute("aria-invalid") === "true"`)
		retype(t, ctx, "spec", "0 9 * * MON-FRI")
		retype(t, ctx, "zone", "Asia/Tokyo")
		// The handler, chosen from the service's, by the keyboard.
		require.NoError(t, chromedp.Do(ctx, chromedp.Focus(chromedp.ID("handler")), chromedp.KeyEvent("s")))
		until(t, ctx, `document.getElementById("handler").value === "slow"`)
		until(t, ctx, `document.getElementById("preview").textContent.includes("in Asia/Tokyo, Monday through Friday")`)
		until(t, ctx, `document.querySelectorAll("#preview li").length === 5`)
		shoot(t, ctx, "edit.png")

		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("save")), chromedp.WaitVisible(chromedp.CSS(".flash"))))
		got, v, err := f.defs.Get(context.Background(), name)
		require.NoError(t, err)
		assert.Equal(t, int64(2), v)
		assert.Equal(t, "0 9 * * MON-FRI", got.Spec)
		assert.Equal(t, "Asia/Tokyo", got.Zone)
		assert.Equal(t, "slow", got.Handler)
		assert.Equal(t, "buffer-one", got.Overlap, "the fields not edited are kept")
		// The Table applies it; the page shows it once it has.
		until(t, ctx, `document.querySelector(".facts").textContent.includes("0 9 * * MON-FRI")`)
		text, err := textOf(ctx, ".facts")
		require.NoError(t, err)
		assert.True(t, strings.Contains(text, "Asia/Tokyo"), text)
	})
	t.Run("audit", func(t *testing.T) {
		ctx := tab(t)
		// The changes the steps above made, each with who made it; an
		// edit with its fields before and after.
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base), chromedp.Click(chromedp.CSS(`header.top a[href="audit"]`)),
			chromedp.WaitVisible(chromedp.CSS("table.audit tbody tr"))))
		text, err := textOf(ctx, "table.audit")
		require.NoError(t, err)
		for _, want := range []string{"operator", "run", "pause", "resume", `note "maintenance", bulk`,
			`handler: "ok" → "slow"`, `spec: "0 10 1 * *" → "0 9 * * MON-FRI"`, `zone: "Europe/London" → "Asia/Tokyo"`} {
			assert.Contains(t, text, want)
		}
		shoot(t, ctx, "audit.png")
		// A task's page shows its latest changes, and links to them all.
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`table.audit a.name`)),
			chromedp.WaitVisible(chromedp.CSS("table.audit"))))
		until(t, ctx, `[...document.querySelectorAll("h2")].some(h => h.textContent === "Changes")`)
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(360, 780), chromedp.Navigate(base+"audit"),
			chromedp.WaitVisible(chromedp.CSS("table.audit tbody tr"))))
		wide, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		require.NoError(t, err)
		assert.LessOrEqual(t, wide, 360, "no sideways scrolling on a phone")
	})

	t.Run("dark", func(t *testing.T) {
		ctx := tab(t)
		dark := func(on bool) chromedp.Action[chromedp.Void] {
			v := "light"
			if on {
				v = "dark"
			}
			return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
					Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}})
				return err
			})
		}
		// The colours the browser computed for the text and the page:
		// dark on light, then light on dark, each readable (WCAG AA).
		colours := `(() => { const c = s => getComputedStyle(s).color, b = s => getComputedStyle(s).backgroundColor;
			return [c(document.body), b(document.documentElement) === "rgba(0, 0, 0, 0)" ? b(document.body) : b(document.documentElement),
				c(document.querySelector("a.name") || document.body), c(document.querySelector("th"))]; })()`
		for _, on := range []bool{false, true} {
			theme := map[bool]string{false: "light", true: "dark"}[on]
			for _, width := range []int64{1280, 360} {
				require.NoError(t, chromedp.Do(ctx, dark(on), chromedp.EmulateViewport(width, 860), chromedp.Navigate(base),
					chromedp.WaitVisible(chromedp.CSS("table.jobs tbody tr"))))
				cs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](colours))
				require.NoError(t, err)
				bg := cssHex(t, cs[1])
				assert.Equal(t, on, luminance(t, bg) < 0.2, "%s theme: the page's background %s", theme, cs[1])
				for i, c := range []string{cs[0], cs[2], cs[3]} {
					assert.GreaterOrEqual(t, contrast(t, cssHex(t, c), bg), 4.5, "%s theme: text %d, %s on %s", theme, i, c, cs[1])
				}
				shoot(t, ctx, fmt.Sprintf("list-%s-%d.png", theme, width))
			}
		}
	})
}

// until waits for a JavaScript condition to hold in the page of ctx, for
// 45 s at most, a loaded machine's time.
func until(t *testing.T, ctx context.Context, cond string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(45*time.Second)))
	if err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("waiting for %s: %v; the page says:\n%s", cond, err, body)
	}
}

// textOf returns the text of the first element of the page that matches
// the CSS selector sel, once there is one. It reads it in one evaluation
// in the page, where chromedp.Text finds the element, then reads it: the
// page's script, which replaces the part that refreshes, may have replaced
// the element in between, whose text is then "".
func textOf(ctx context.Context, sel string) (string, error) {
	q, err := json.Marshal(sel)
	if err != nil {
		return "", err
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector(`+string(q)+`) !== null`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(45*time.Second))); err != nil {
		return "", err
	}
	return chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+string(q)+`) || {innerText: ""}).innerText`))
}

// cssHex returns the colour rgb(r, g, b) that a browser computed as
// #rrggbb.
func cssHex(t *testing.T, rgb string) string {
	t.Helper()
	var r, g, b int
	_, err := fmt.Sscanf(rgb, "rgb(%d, %d, %d)", &r, &g, &b)
	require.NoError(t, err, "colour %q", rgb)
	return fmt.Sprintf("#%02x%02x%02x", r, g, b)
}
