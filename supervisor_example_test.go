package circulation_test

import (
	"context"
	"errors"
	"expvar"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/circulation-go/circulation"
)

// A task logs "retrying in X" with WithNotify: each attempt's outcome comes
// with the delay drawn for the next one, and a permanent error says that
// nothing follows. Wait returns that error.
func ExampleWithNotify() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // deterministic output
			}
			return a
		},
	}))
	n := 0
	s := circulation.Supervise(func(ctx context.Context) error {
		n++ // attempts never overlap
		switch {
		case n == 2:
			return circulation.RetryAfter(3*time.Millisecond, errors.New("503 busy"))
		case n < 4:
			return errors.New("connection refused")
		case n == 4:
			return nil
		}
		return circulation.Permanent(errors.New("410 gone"))
	}, circulation.Backoff{Base: time.Millisecond, Max: 8 * time.Millisecond, Retry: 2 * time.Millisecond},
		circulation.WithNotify(func(ev circulation.AttemptEvent) {
			attrs := []any{"attempt", ev.Attempt, "outcome", ev.Outcome}
			if ev.Err != nil {
				attrs = append(attrs, "err", ev.Err)
			}
			if ev.Scheduled {
				attrs = append(attrs, "next", ev.Next)
			}
			level := slog.LevelWarn
			if ev.Outcome == circulation.AttemptSucceeded {
				level = slog.LevelInfo
			}
			logger.Log(context.Background(), level, "registry refresh", attrs...)
		}))
	s.Fire()
	err := s.Wait(context.Background())
	_ = s.Close(context.Background()) // waits for the last notification too
	fmt.Println("stopped:", err)
	// Output:
	// level=WARN msg="registry refresh" attempt=1 outcome=error err="connection refused" next=2ms
	// level=WARN msg="registry refresh" attempt=2 outcome=error err="503 busy" next=3ms
	// level=WARN msg="registry refresh" attempt=3 outcome=error err="connection refused" next=8ms
	// level=INFO msg="registry refresh" attempt=4 outcome=success next=1ms
	// level=WARN msg="registry refresh" attempt=5 outcome=permanent err="410 gone"
	// stopped: 410 gone
}

// Stats publishes as an expvar.Func: /debug/vars then serves a
// consistent snapshot of the counters as JSON.
func ExampleSupervisor_Stats_expvar() {
	n := 0
	s := circulation.Supervise(func(ctx context.Context) error {
		n++
		if n < 3 {
			return errors.New("connection refused")
		}
		return circulation.Permanent(errors.New("410 gone"))
	}, circulation.Backoff{Base: time.Millisecond, Max: time.Millisecond})
	expvar.Publish("registry_supervisor", expvar.Func(func() any { return s.Stats() }))
	s.Fire()
	_ = s.Wait(context.Background())
	fmt.Println(expvar.Get("registry_supervisor"))
	_ = s.Close(context.Background())
	// Output:
	// {"Attempts":3,"Successes":0,"Errors":3,"Panics":0,"Timeouts":0,"Canceled":0,"Skipped":0,"Late":0,"ConsecutiveFailures":3,"Delay":0,"Running":false}
}
