package circulation_test

import (
	"context"
	"expvar"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/circulation-go/circulation"
)

// A Trigger logs what happens to it with WithObserver: each run's start and
// end, with its lateness and its answer, fires that joined a run, and
// armings superseded before they ran.
func ExampleWithObserver() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // deterministic output
			}
			return a
		},
	}))
	done := make(chan struct{})
	observe := func(ev circulation.TriggerEvent) {
		switch ev.Kind {
		case circulation.RunStarted:
			// A service would log the lateness, ev.Start.Sub(ev.Due), and
			// the run's duration: here they vary from run to run.
			logger.Info("reload", "event", ev.Kind, "run", ev.Run)
		case circulation.RunEnded:
			logger.Info("reload", "event", ev.Kind, "run", ev.Run, "next", ev.Next, "again", ev.Again,
				"superseded", ev.Superseded, "panicked", ev.Panicked)
			if ev.Run == 3 {
				close(done)
			}
		case circulation.FireCoalesced:
			logger.Info("reload", "event", ev.Kind, "into_run", ev.Running)
		case circulation.ArmingSuperseded:
			logger.Info("reload", "event", ev.Kind)
		}
	}
	var tr *circulation.Trigger
	n := 0
	tr = circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
		n++ // runs never overlap
		switch n {
		case 1:
			tr.Fire() // "update now" during the run: one more run follows
			return time.Hour, true
		case 2:
			return time.Millisecond, true
		}
		return 0, false
	}, circulation.WithObserver(observe))

	tr.Fire()
	<-done
	_ = tr.Stop(context.Background())
	tr.FireAfter(time.Hour)
	_ = tr.Stop(context.Background()) // supersedes the hour
	// Output:
	// level=INFO msg=reload event=run-started run=1
	// level=INFO msg=reload event=fire-coalesced into_run=true
	// level=INFO msg=reload event=run-ended run=1 next=1h0m0s again=true superseded=true panicked=false
	// level=INFO msg=reload event=run-started run=2
	// level=INFO msg=reload event=run-ended run=2 next=1ms again=true superseded=false panicked=false
	// level=INFO msg=reload event=run-started run=3
	// level=INFO msg=reload event=run-ended run=3 next=0s again=false superseded=false panicked=false
	// level=INFO msg=reload event=arming-superseded
}

// Stats publishes as an expvar.Func: /debug/vars then serves a snapshot of
// the counters as JSON.
func ExampleTrigger_Stats_expvar() {
	done := make(chan struct{})
	n := 0
	var tr *circulation.Trigger
	tr = circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
		n++
		if n == 1 {
			tr.Fire() // joins the run in flight
			tr.Fire()
			return 0, false
		}
		close(done)
		return 0, false
	}, circulation.WithStats())
	expvar.Publish("reload_trigger", expvar.Func(func() any { return tr.Stats() }))
	tr.Fire()
	<-done
	_ = tr.Stop(context.Background())
	fmt.Println(expvar.Get("reload_trigger"))
	// Output:
	// {"Runs":2,"Panics":0,"Fires":3,"Coalesced":2,"Superseded":0,"Running":false}
}
