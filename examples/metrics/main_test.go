package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/examples/internal/cmdtest"
)

func TestMain(m *testing.M) {
	cmdtest.RunMainIfChild(main)
	goleak.VerifyTestMain(m)
}

const ms = time.Millisecond

// series returns what reg exports, in the text format, without comments.
func series(t *testing.T, reg prometheus.Gatherer) string {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var b strings.Builder
	for _, mf := range mfs {
		_, err := expfmt.MetricFamilyToText(&b, mf)
		require.NoError(t, err)
	}
	var kept []string
	for l := range strings.Lines(b.String()) {
		if !strings.HasPrefix(l, "#") {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "")
}

// On the fake clock, every run's duration and lateness is exact, and so is
// every bucket, sum and count; the counters are read at each scrape.
func TestTriggerMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m := NewTriggerMetrics("reload", reg)
		n := 0
		tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
			n++
			switch n {
			case 1:
				time.Sleep(500 * ms)
				return 0, false
			case 2:
				time.Sleep(250 * ms)
				return 125 * ms, true
			}
			time.Sleep(2 * time.Second)
			panic("bad config")
		}, circulation.WithObserver(m.Observe), circulation.WithPanicHandler(func(any) {}))
		m.Watch(tr)
		start := time.Now()

		tr.Fire() // run 1: 0 to 500ms, on time
		time.Sleep(250 * ms)
		tr.Fire() // during run 1: run 2 is due at 250ms
		tr.Fire() // joins it
		// Run 2: 500ms to 750ms, 250ms late; run 3: 875ms to 2875ms, on time.
		time.Sleep(750 * ms)
		assert.Equal(t, `circulation_trigger_armings_superseded_total{trigger="reload"} 0
circulation_trigger_fires_coalesced_total{trigger="reload"} 2
circulation_trigger_fires_total{trigger="reload"} 3
circulation_trigger_next_run_timestamp_seconds{trigger="reload"} 0
circulation_trigger_panics_total{trigger="reload"} 0
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="0.005"} 0
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="0.01"} 0
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="0.025"} 0
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="0.05"} 0
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="0.1"} 0
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="0.25"} 1
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="0.5"} 2
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="1"} 2
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="2.5"} 2
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="5"} 2
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="10"} 2
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="+Inf"} 2
circulation_trigger_run_duration_seconds_sum{trigger="reload"} 0.75
circulation_trigger_run_duration_seconds_count{trigger="reload"} 2
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="0.0001"} 2
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="0.0005"} 2
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="0.001"} 2
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="0.005"} 2
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="0.01"} 2
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="0.05"} 2
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="0.1"} 2
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="0.5"} 3
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="1"} 3
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="5"} 3
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="10"} 3
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="+Inf"} 3
circulation_trigger_run_lateness_seconds_sum{trigger="reload"} 0.25
circulation_trigger_run_lateness_seconds_count{trigger="reload"} 3
circulation_trigger_running{trigger="reload"} 1
circulation_trigger_runs_total{trigger="reload"} 3
`, series(t, reg), "at 1s: run 3 is in flight")

		time.Sleep(2 * time.Second)        // run 3 panics at 2875ms
		tr.FireAfter(time.Hour)            // at 3s
		tr.FireAfter(2*time.Hour + 250*ms) // supersedes the hour
		next := start.Add(3*time.Second + 2*time.Hour + 250*ms)
		assert.Equal(t, `circulation_trigger_armings_superseded_total{trigger="reload"} 1
circulation_trigger_fires_coalesced_total{trigger="reload"} 2
circulation_trigger_fires_total{trigger="reload"} 5
circulation_trigger_next_run_timestamp_seconds{trigger="reload"} `+fmt.Sprint(float64(next.UnixNano())/1e9)+`
circulation_trigger_panics_total{trigger="reload"} 1
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="0.005"} 0
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="0.01"} 0
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="0.025"} 0
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="0.05"} 0
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="0.1"} 0
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="0.25"} 1
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="0.5"} 2
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="1"} 2
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="2.5"} 3
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="5"} 3
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="10"} 3
circulation_trigger_run_duration_seconds_bucket{trigger="reload",le="+Inf"} 3
circulation_trigger_run_duration_seconds_sum{trigger="reload"} 2.75
circulation_trigger_run_duration_seconds_count{trigger="reload"} 3
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="0.0001"} 2
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="0.0005"} 2
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="0.001"} 2
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="0.005"} 2
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="0.01"} 2
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="0.05"} 2
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="0.1"} 2
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="0.5"} 3
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="1"} 3
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="5"} 3
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="10"} 3
circulation_trigger_run_lateness_seconds_bucket{trigger="reload",le="+Inf"} 3
circulation_trigger_run_lateness_seconds_sum{trigger="reload"} 0.25
circulation_trigger_run_lateness_seconds_count{trigger="reload"} 3
circulation_trigger_running{trigger="reload"} 0
circulation_trigger_runs_total{trigger="reload"} 3
`, series(t, reg), "at 3s: resting, due in two hours")

		require.NoError(t, tr.Stop(context.Background()))
		assert.Contains(t, "\n"+series(t, reg), "\ncirculation_trigger_armings_superseded_total{trigger=\"reload\"} 2\n",
			"Stop supersedes the arming")
	})
}

// Lateness is never negative: a run whose due time is after its start (as
// a step of the wall clock can make it look) or unknown counts as on time.
func TestLatenessIsNeverNegative(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewTriggerMetrics("t", reg)
	now := time.Now()
	m.Observe(circulation.TriggerEvent{Kind: circulation.RunStarted, Run: 1, Due: now.Add(time.Second), Start: now})
	m.Observe(circulation.TriggerEvent{Kind: circulation.RunStarted, Run: 2, Start: now})
	m.Observe(circulation.TriggerEvent{Kind: circulation.RunStarted, Run: 3, Due: now.Add(-time.Second), Start: now})
	assert.Contains(t, series(t, reg), `circulation_trigger_run_lateness_seconds_bucket{trigger="t",le="0.0001"} 2
`)
	assert.Contains(t, series(t, reg), `circulation_trigger_run_lateness_seconds_sum{trigger="t"} 1
`)
}

// Observe and Notify, on the run's goroutine, allocate nothing.
func TestObserveAllocatesNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	tm := NewTriggerMetrics("t", reg)
	sm := NewSupervisorMetrics("s", reg)
	now := time.Now()
	started := circulation.TriggerEvent{Kind: circulation.RunStarted, Run: 1, Due: now, Start: now.Add(ms)}
	ended := circulation.TriggerEvent{Kind: circulation.RunEnded, Run: 1, Due: now, Start: now.Add(ms), Duration: 5 * ms}
	attempt := circulation.AttemptEvent{Outcome: circulation.AttemptSucceeded, Attempt: 1, Start: now, Duration: 5 * ms}
	sm.Notify(attempt) // makes the outcome's histogram
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		tm.Observe(started)
		tm.Observe(ended)
		sm.Notify(attempt)
	}))
}

// BenchmarkObserve measures what the adapters add to each run (a run's
// two events, an attempt's one), against the two observations of bare
// histograms that they make at least.
func BenchmarkObserve(b *testing.B) {
	reg := prometheus.NewRegistry()
	tm := NewTriggerMetrics("t", reg)
	sm := NewSupervisorMetrics("s", reg)
	now := time.Now()
	started := circulation.TriggerEvent{Kind: circulation.RunStarted, Run: 1, Due: now, Start: now.Add(ms)}
	ended := circulation.TriggerEvent{Kind: circulation.RunEnded, Run: 1, Due: now, Start: now.Add(ms), Duration: 5 * ms}
	attempt := circulation.AttemptEvent{Outcome: circulation.AttemptSucceeded, Attempt: 1, Start: now, Duration: 5 * ms}
	bare := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bare", Buckets: prometheus.DefBuckets})
	b.Run("baseline=Histogram", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bare.Observe(started.Start.Sub(started.Due).Seconds())
			bare.Observe(ended.Duration.Seconds())
		}
	})
	b.Run("TriggerMetrics", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tm.Observe(started)
			tm.Observe(ended)
		}
	})
	b.Run("SupervisorMetrics", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sm.Notify(attempt)
		}
	})
}

// Until Watch names the Trigger, only the histograms are exported.
func TestTriggerMetricsBeforeWatch(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewTriggerMetrics("t", reg)
	NewSupervisorMetrics("s", reg)
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the Trigger's two histograms; the Supervisor's has no outcome yet")
}

// Two Triggers export to one registry under their own names; a second
// TriggerMetrics with the same name is refused.
func TestTriggerMetricsNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewTriggerMetrics("a", reg)
	NewTriggerMetrics("b", reg)
	assert.Panics(t, func() { NewTriggerMetrics("a", reg) })
}

func TestSupervisorMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m := NewSupervisorMetrics("register", reg)
		n := 0
		s := circulation.Supervise(func(ctx context.Context) error {
			n++
			switch n {
			case 1: // at 0
				time.Sleep(250 * ms)
				return nil
			case 2: // at 1.25s
				time.Sleep(500 * ms)
				return errors.New("503")
			case 3: // at 3.75s
				time.Sleep(125 * ms)
				panic("bad answer")
			case 4: // at 7.875s: times out at 8.875s and returns at once
				<-ctx.Done()
				return ctx.Err()
			}
			time.Sleep(250 * ms) // at 12.875s
			return circulation.Permanent(errors.New("410"))
		}, circulation.Backoff{Base: time.Second, Max: 4 * time.Second, Timeout: time.Second},
			circulation.WithNotify(m.Notify))
		m.Watch(s)
		start := time.Now()
		s.Fire()
		assert.Error(t, s.Wait(context.Background()))
		assert.Equal(t, 13125*ms, time.Since(start), "when the permanent error stopped it")
		require.NoError(t, s.Close(context.Background()))

		assert.Equal(t, `circulation_supervisor_attempt_duration_seconds_bucket{outcome="error",supervisor="register",le="0.005"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="error",supervisor="register",le="0.01"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="error",supervisor="register",le="0.025"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="error",supervisor="register",le="0.05"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="error",supervisor="register",le="0.1"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="error",supervisor="register",le="0.25"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="error",supervisor="register",le="0.5"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="error",supervisor="register",le="1"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="error",supervisor="register",le="2.5"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="error",supervisor="register",le="5"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="error",supervisor="register",le="10"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="error",supervisor="register",le="+Inf"} 1
circulation_supervisor_attempt_duration_seconds_sum{outcome="error",supervisor="register"} 0.5
circulation_supervisor_attempt_duration_seconds_count{outcome="error",supervisor="register"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="late",supervisor="register",le="0.005"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="late",supervisor="register",le="0.01"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="late",supervisor="register",le="0.025"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="late",supervisor="register",le="0.05"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="late",supervisor="register",le="0.1"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="late",supervisor="register",le="0.25"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="late",supervisor="register",le="0.5"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="late",supervisor="register",le="1"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="late",supervisor="register",le="2.5"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="late",supervisor="register",le="5"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="late",supervisor="register",le="10"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="late",supervisor="register",le="+Inf"} 1
circulation_supervisor_attempt_duration_seconds_sum{outcome="late",supervisor="register"} 1
circulation_supervisor_attempt_duration_seconds_count{outcome="late",supervisor="register"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="panic",supervisor="register",le="0.005"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="panic",supervisor="register",le="0.01"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="panic",supervisor="register",le="0.025"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="panic",supervisor="register",le="0.05"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="panic",supervisor="register",le="0.1"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="panic",supervisor="register",le="0.25"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="panic",supervisor="register",le="0.5"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="panic",supervisor="register",le="1"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="panic",supervisor="register",le="2.5"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="panic",supervisor="register",le="5"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="panic",supervisor="register",le="10"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="panic",supervisor="register",le="+Inf"} 1
circulation_supervisor_attempt_duration_seconds_sum{outcome="panic",supervisor="register"} 0.125
circulation_supervisor_attempt_duration_seconds_count{outcome="panic",supervisor="register"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="permanent",supervisor="register",le="0.005"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="permanent",supervisor="register",le="0.01"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="permanent",supervisor="register",le="0.025"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="permanent",supervisor="register",le="0.05"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="permanent",supervisor="register",le="0.1"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="permanent",supervisor="register",le="0.25"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="permanent",supervisor="register",le="0.5"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="permanent",supervisor="register",le="1"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="permanent",supervisor="register",le="2.5"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="permanent",supervisor="register",le="5"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="permanent",supervisor="register",le="10"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="permanent",supervisor="register",le="+Inf"} 1
circulation_supervisor_attempt_duration_seconds_sum{outcome="permanent",supervisor="register"} 0.25
circulation_supervisor_attempt_duration_seconds_count{outcome="permanent",supervisor="register"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="success",supervisor="register",le="0.005"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="success",supervisor="register",le="0.01"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="success",supervisor="register",le="0.025"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="success",supervisor="register",le="0.05"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="success",supervisor="register",le="0.1"} 0
circulation_supervisor_attempt_duration_seconds_bucket{outcome="success",supervisor="register",le="0.25"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="success",supervisor="register",le="0.5"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="success",supervisor="register",le="1"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="success",supervisor="register",le="2.5"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="success",supervisor="register",le="5"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="success",supervisor="register",le="10"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="success",supervisor="register",le="+Inf"} 1
circulation_supervisor_attempt_duration_seconds_sum{outcome="success",supervisor="register"} 0.25
circulation_supervisor_attempt_duration_seconds_count{outcome="success",supervisor="register"} 1
circulation_supervisor_attempts_ended_total{outcome="canceled",supervisor="register"} 0
circulation_supervisor_attempts_ended_total{outcome="error",supervisor="register"} 2
circulation_supervisor_attempts_ended_total{outcome="panic",supervisor="register"} 1
circulation_supervisor_attempts_ended_total{outcome="success",supervisor="register"} 1
circulation_supervisor_attempts_ended_total{outcome="timeout",supervisor="register"} 1
circulation_supervisor_attempts_late_total{supervisor="register"} 1
circulation_supervisor_attempts_skipped_total{supervisor="register"} 0
circulation_supervisor_attempts_started_total{supervisor="register"} 5
circulation_supervisor_consecutive_failures{supervisor="register"} 4
circulation_supervisor_delay_seconds{supervisor="register"} 0
circulation_supervisor_running{supervisor="register"} 0
`, series(t, reg))
	})
}

// inMemory calls the metrics handler directly: a goroutine blocked on a
// real socket would keep a synctest bubble's clock from advancing.
func inMemory(h http.Handler) (string, func() (string, error), func(), error) {
	scrape := func() (string, error) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String(), nil
	}
	return "http://metrics.test/metrics", scrape, func() {}, nil
}

// The whole story on the fake clock, as it prints.
func TestStory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		require.NoError(t, run(context.Background(), &out, config{unit: 50 * ms, serve: inMemory}))
		assert.Equal(t, ` 0.000s  serving http://metrics.test/metrics; the unit is 50ms
 0.000s  reload: FireWithin(0): a reload starts at once
 0.020s  registration: attempt 1: success; next in 100ms
 0.050s  reload: 4 "update now" messages during the reload coalesce into one more, due now: it starts 1 unit late, when this one ends
 0.120s  report: a slot ran: Succeeded
 0.140s  registration: attempt 2: error: registry: 503 Service Unavailable; next in 25ms
 0.215s  registration: attempt 3: timeout: context deadline exceeded; next in 50ms
 0.215s  registration: attempt 3: late: context deadline exceeded
 0.220s  report: a slot ran: Succeeded
 0.250s  reload: the interval changes: FireAfter(3 units) supersedes the reload due at 14
 0.285s  registration: attempt 4: success; next in 100ms
 0.300s  reload: FireWithin(5 units): the reload due at 8 is sooner, the call joins it
 0.320s  report: a slot ran: Failed: the warehouse did not answer
 0.405s  registration: attempt 5: permanent: registry: 410 Gone
 0.420s  report: a slot ran: Succeeded
 0.450s  reload: the run panicked (malformed configuration); the Trigger rests until the next Fire
 0.500s  reload: Fire: a reload after the panic
 0.520s  report: a slot ran: Succeeded
 0.620s  report: a slot ran: Succeeded
 0.650s  reload: Stop supersedes the reload due at 22

GET /metrics: 211 lines; without comments and empty buckets (-all prints them all):
circulation_claim_lost_total{job="report"} 6
circulation_run_active{job="report"} 0
circulation_run_duration_seconds_bucket{job="report",reason="Scheduled",status="Failed",le="0.025"} 1
circulation_run_duration_seconds_sum{job="report",reason="Scheduled",status="Failed"} 0.02
circulation_run_duration_seconds_count{job="report",reason="Scheduled",status="Failed"} 1
circulation_run_duration_seconds_bucket{job="report",reason="Scheduled",status="Succeeded",le="0.025"} 5
circulation_run_duration_seconds_sum{job="report",reason="Scheduled",status="Succeeded"} 0.1
circulation_run_duration_seconds_count{job="report",reason="Scheduled",status="Succeeded"} 5
circulation_run_lateness_seconds_bucket{job="report",reason="Scheduled",le="0.001"} 6
circulation_run_lateness_seconds_sum{job="report",reason="Scheduled"} 0
circulation_run_lateness_seconds_count{job="report",reason="Scheduled"} 6
circulation_runs_total{job="report",reason="Scheduled",status="Failed"} 1
circulation_runs_total{job="report",reason="Scheduled",status="Succeeded"} 5
circulation_supervisor_attempt_duration_seconds_bucket{outcome="error",supervisor="registration",le="0.025"} 1
circulation_supervisor_attempt_duration_seconds_sum{outcome="error",supervisor="registration"} 0.02
circulation_supervisor_attempt_duration_seconds_count{outcome="error",supervisor="registration"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="late",supervisor="registration",le="0.05"} 1
circulation_supervisor_attempt_duration_seconds_sum{outcome="late",supervisor="registration"} 0.05
circulation_supervisor_attempt_duration_seconds_count{outcome="late",supervisor="registration"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="permanent",supervisor="registration",le="0.025"} 1
circulation_supervisor_attempt_duration_seconds_sum{outcome="permanent",supervisor="registration"} 0.02
circulation_supervisor_attempt_duration_seconds_count{outcome="permanent",supervisor="registration"} 1
circulation_supervisor_attempt_duration_seconds_bucket{outcome="success",supervisor="registration",le="0.025"} 2
circulation_supervisor_attempt_duration_seconds_sum{outcome="success",supervisor="registration"} 0.04
circulation_supervisor_attempt_duration_seconds_count{outcome="success",supervisor="registration"} 2
circulation_supervisor_attempts_ended_total{outcome="canceled",supervisor="registration"} 0
circulation_supervisor_attempts_ended_total{outcome="error",supervisor="registration"} 2
circulation_supervisor_attempts_ended_total{outcome="panic",supervisor="registration"} 0
circulation_supervisor_attempts_ended_total{outcome="success",supervisor="registration"} 2
circulation_supervisor_attempts_ended_total{outcome="timeout",supervisor="registration"} 1
circulation_supervisor_attempts_late_total{supervisor="registration"} 1
circulation_supervisor_attempts_skipped_total{supervisor="registration"} 0
circulation_supervisor_attempts_started_total{supervisor="registration"} 5
circulation_supervisor_consecutive_failures{supervisor="registration"} 1
circulation_supervisor_delay_seconds{supervisor="registration"} 0
circulation_supervisor_running{supervisor="registration"} 0
circulation_trigger_armings_superseded_total{trigger="config_reload"} 2
circulation_trigger_fires_coalesced_total{trigger="config_reload"} 5
circulation_trigger_fires_total{trigger="config_reload"} 8
circulation_trigger_next_run_timestamp_seconds{trigger="config_reload"} 0
circulation_trigger_panics_total{trigger="config_reload"} 1
circulation_trigger_run_duration_seconds_bucket{trigger="config_reload",le="0.05"} 1
circulation_trigger_run_duration_seconds_bucket{trigger="config_reload",le="0.1"} 4
circulation_trigger_run_duration_seconds_sum{trigger="config_reload"} 0.35
circulation_trigger_run_duration_seconds_count{trigger="config_reload"} 4
circulation_trigger_run_lateness_seconds_bucket{trigger="config_reload",le="0.0001"} 3
circulation_trigger_run_lateness_seconds_bucket{trigger="config_reload",le="0.05"} 4
circulation_trigger_run_lateness_seconds_sum{trigger="config_reload"} 0.05
circulation_trigger_run_lateness_seconds_count{trigger="config_reload"} 4
circulation_trigger_running{trigger="config_reload"} 0
circulation_trigger_runs_total{trigger="config_reload"} 4
`, out.String())
	})
}

// The program, run as a user runs it, serves /metrics on a loopback port,
// scrapes it and prints every series. On the real clock a busy machine
// can change the story's counts (a Fire that was to come after a run comes
// during it), and the number of the report's slots in the story depends on
// when it starts: TestStory checks them on the fake clock. What holds
// whatever the timing: the program tells the story in order, exports every
// series, and counts each run once in each place, the lateness histogram,
// the duration histogram and the runs counter, for the Trigger and for
// the jobs; the claim of each slot of the report is lost by one replica;
// no run is in flight at the end.
func TestProgram(t *testing.T) {
	stdout, stderr, code := cmdtest.Run(t, "-unit", "10ms")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Empty(t, stderr)
	assert.Regexp(t, `serving http://127\.0\.0\.1:\d+/metrics`, stdout)
	assert.Regexp(t, `(?s)FireWithin\(0\).*coalesce.*FireAfter\(3 units\).*FireWithin\(5 units\).*Fire: a reload after the panic.*Stop supersedes`, stdout)
	for _, name := range []string{
		"circulation_runs_total",
		"circulation_run_duration_seconds_count",
		"circulation_run_lateness_seconds_count",
		"circulation_run_active",
		"circulation_claim_lost_total",
		"circulation_trigger_run_duration_seconds_count",
		"circulation_trigger_run_lateness_seconds_count",
		"circulation_trigger_runs_total",
		"circulation_trigger_panics_total",
		"circulation_trigger_fires_total",
		"circulation_trigger_fires_coalesced_total",
		"circulation_trigger_armings_superseded_total",
		"circulation_trigger_running",
		"circulation_trigger_next_run_timestamp_seconds",
		"circulation_supervisor_attempt_duration_seconds_count",
		"circulation_supervisor_attempts_started_total",
		"circulation_supervisor_attempts_ended_total",
		"circulation_supervisor_attempts_skipped_total",
		"circulation_supervisor_attempts_late_total",
		"circulation_supervisor_consecutive_failures",
		"circulation_supervisor_delay_seconds",
		"circulation_supervisor_running",
	} {
		assert.Contains(t, stdout, "\n"+name+"{")
	}
	assert.NotContains(t, stdout, "# HELP")

	all, _, code := cmdtest.Run(t, "-unit", "10ms", "-all")
	require.Equal(t, 0, code)
	assert.Contains(t, all, "# HELP circulation_trigger_run_lateness_seconds ")
	trigger := `{trigger="config_reload"}`
	runs := sample(t, all, "circulation_trigger_runs_total"+trigger)
	assert.NotEqual(t, "0", runs, "the story runs the Trigger")
	assert.Equal(t, runs, sample(t, all, `circulation_trigger_run_lateness_seconds_bucket{trigger="config_reload",le="+Inf"}`))
	assert.Equal(t, runs, sample(t, all, "circulation_trigger_run_lateness_seconds_count"+trigger))
	assert.Equal(t, runs, sample(t, all, "circulation_trigger_run_duration_seconds_count"+trigger), "every run ended by Stop")
	assert.Equal(t, "0", sample(t, all, "circulation_trigger_running"+trigger))

	report := `{job="report",reason="Scheduled",status=`
	failed, succeeded := atoi(t, sample(t, all, "circulation_runs_total"+report+`"Failed"}`)),
		atoi(t, sample(t, all, "circulation_runs_total"+report+`"Succeeded"}`))
	assert.Equal(t, 1, failed, "the third report fails")
	assert.GreaterOrEqual(t, succeeded, 4, "the report runs every 2 units of 13")
	assert.Equal(t, failed, atoi(t, sample(t, all, "circulation_run_duration_seconds_count"+report+`"Failed"}`)))
	assert.Equal(t, succeeded, atoi(t, sample(t, all, "circulation_run_duration_seconds_count"+report+`"Succeeded"}`)))
	// The slots that ran, a run that the Stop cut short (Canceled)
	// included, and not those Skipped: each has its lateness. The claim
	// of each is lost by the other replica, unless that one was busy, or
	// stopped first.
	ran := 0
	for l := range strings.Lines(all) {
		if strings.HasPrefix(l, "circulation_runs_total"+report) && !strings.Contains(l, `"Skipped"`) {
			ran += atoi(t, strings.TrimSpace(l[strings.LastIndexByte(l, ' ')+1:]))
		}
	}
	assert.Equal(t, ran, atoi(t, sample(t, all, `circulation_run_lateness_seconds_count{job="report",reason="Scheduled"}`)))
	lost := atoi(t, sample(t, all, `circulation_claim_lost_total{job="report"}`))
	assert.Positive(t, lost)
	assert.LessOrEqual(t, lost, ran)
	assert.Equal(t, "0", sample(t, all, `circulation_run_active{job="report"}`))
}

// atoi is strconv.Atoi, failing t on an error.
func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// sample returns the value of series in a scrape in the text format.
func sample(t *testing.T, scrape, series string) string {
	t.Helper()
	for l := range strings.Lines(scrape) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), series+" "); ok {
			return v
		}
	}
	t.Errorf("no %s in the scrape", series)
	return ""
}

func TestBadInput(t *testing.T) {
	cmdtest.BadInput{
		"-unit 5ms":  "metrics: -unit must be between 10ms and 500ms, got 5ms (see -h)",
		"-unit 1s":   "metrics: -unit must be between 10ms and 500ms, got 1s (see -h)",
		"-unit x":    `metrics: invalid value "x" for flag -unit: parse error (see -h)`,
		"-units 1ms": "metrics: flag provided but not defined: -units (see -h)",
		"now":        `metrics: unexpected argument "now" (see -h)`,
	}.Check(t)
}

func TestHelp(t *testing.T) {
	stdout, stderr, code := cmdtest.Run(t, "-h")
	assert.Equal(t, 0, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "-unit d")
	assert.Contains(t, stderr, "-all")
}
