package main

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/circulation-go/circulation"
)

// SupervisorMetrics exports what a Supervisor does to Prometheus, under the
// label supervisor="name":
//
//	circulation_supervisor_attempt_duration_seconds  histogram, by outcome: how long each attempt ran
//	circulation_supervisor_attempts_started_total    counter: attempts started
//	circulation_supervisor_attempts_ended_total      counter, by outcome: success, error, panic, timeout, canceled
//	circulation_supervisor_attempts_skipped_total    counter: due attempts skipped, an abandoned one still running
//	circulation_supervisor_attempts_late_total       counter: abandoned attempts that have since returned
//	circulation_supervisor_consecutive_failures      gauge: failures since the last success
//	circulation_supervisor_delay_seconds             gauge: the delay drawn last
//	circulation_supervisor_running                   gauge: 1 while an attempt runs
//
// The histogram is fed by Notify, which the Supervisor calls through
// WithNotify: it observes each attempt once, when its result is known, by
// its outcome's name ("success", "error", "panic", "permanent", "canceled",
// or "late" for an attempt that returned after its timeout). The counters
// and gauges are read from the Supervisor's Stats at each scrape, once
// Watch has named it; the ended counter's outcomes are the Stats fields,
// so a permanent error counts there as an error. Started minus the sum of
// ended is 1 while an attempt runs that has not timed out.
//
// A SupervisorMetrics is a prometheus.Collector, safe for concurrent use.
type SupervisorMetrics struct {
	duration   *prometheus.HistogramVec
	supervisor atomic.Pointer[circulation.Supervisor]

	started, ended, skipped, late, failures, delay, running *prometheus.Desc
}

// NewSupervisorMetrics returns the metrics of the Supervisor called name,
// and registers them with reg. It panics if reg already has metrics by that
// name.
func NewSupervisorMetrics(name string, reg prometheus.Registerer) *SupervisorMetrics {
	labels := prometheus.Labels{"supervisor": name}
	desc := func(metric, help string, variable ...string) *prometheus.Desc {
		return prometheus.NewDesc("circulation_supervisor_"+metric, help, variable, labels)
	}
	m := &SupervisorMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "circulation_supervisor_attempt_duration_seconds",
			Help:        "How long each attempt ran, by how it ended.",
			ConstLabels: labels,
			Buckets:     prometheus.DefBuckets,
		}, []string{"outcome"}),
		started:  desc("attempts_started_total", "Attempts started."),
		ended:    desc("attempts_ended_total", "Attempts ended, by outcome.", "outcome"),
		skipped:  desc("attempts_skipped_total", "Due attempts that did not start because an abandoned one was still running."),
		late:     desc("attempts_late_total", "Attempts abandoned at their timeout that have since returned."),
		failures: desc("consecutive_failures", "Timeouts, skips, errors and panics since the last success."),
		delay:    desc("delay_seconds", "The delay drawn last for the next attempt; 0 after a permanent error."),
		running:  desc("running", "1 while an attempt runs, in time or abandoned, else 0."),
	}
	reg.MustRegister(m)
	return m
}

// Notify records an attempt's duration. Pass it to WithNotify:
// circulation.WithNotify(m.Notify).
func (m *SupervisorMetrics) Notify(ev circulation.AttemptEvent) {
	switch ev.Outcome {
	case circulation.AttemptTimedOut, circulation.AttemptSkipped:
		// A timeout's Duration is the Timeout: the attempt is observed
		// when it returns, as late. A skip never ran.
		return
	}
	m.duration.WithLabelValues(ev.Outcome.String()).Observe(ev.Duration.Seconds())
}

// Watch makes the counters and gauges report s's Stats.
func (m *SupervisorMetrics) Watch(s *circulation.Supervisor) { m.supervisor.Store(s) }

// Describe implements prometheus.Collector.
func (m *SupervisorMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.duration.Describe(ch)
	for _, d := range []*prometheus.Desc{m.started, m.ended, m.skipped, m.late, m.failures, m.delay, m.running} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. It reads the Supervisor's
// Stats, which takes no lock and never waits for an attempt.
func (m *SupervisorMetrics) Collect(ch chan<- prometheus.Metric) {
	m.duration.Collect(ch)
	s := m.supervisor.Load()
	if s == nil {
		return
	}
	st := s.Stats()
	counter := func(d *prometheus.Desc, v uint64, outcome ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), outcome...)
	}
	counter(m.started, st.Attempts)
	counter(m.ended, st.Successes, circulation.AttemptSucceeded.String())
	counter(m.ended, st.Errors, circulation.AttemptFailed.String())
	counter(m.ended, st.Panics, circulation.AttemptPanicked.String())
	counter(m.ended, st.Timeouts, circulation.AttemptTimedOut.String())
	counter(m.ended, st.Canceled, circulation.AttemptCanceled.String())
	counter(m.skipped, st.Skipped)
	counter(m.late, st.Late)
	ch <- prometheus.MustNewConstMetric(m.failures, prometheus.GaugeValue, float64(st.ConsecutiveFailures))
	ch <- prometheus.MustNewConstMetric(m.delay, prometheus.GaugeValue, st.Delay.Seconds())
	ch <- prometheus.MustNewConstMetric(m.running, prometheus.GaugeValue, boolValue(st.Running))
}
