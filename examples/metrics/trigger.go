package main

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/circulation-go/circulation"
)

// LatenessBuckets are the buckets of the lateness histogram, in seconds:
// a run the Scheduler starts on time is a few microseconds late, one that
// waited for the run before it as late as that run was long.
var LatenessBuckets = []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5, 10}

// TriggerMetrics exports what a Trigger does to Prometheus, under the label
// trigger="name":
//
//	circulation_trigger_run_duration_seconds        histogram: how long each run of the Func took
//	circulation_trigger_run_lateness_seconds        histogram: how long after its due time each run started
//	circulation_trigger_runs_total                  counter: runs begun
//	circulation_trigger_panics_total                counter: runs that panicked
//	circulation_trigger_fires_total                 counter: Fire, FireAfter and FireWithin calls taken
//	circulation_trigger_fires_coalesced_total       counter: fires that joined a pending or running run
//	circulation_trigger_armings_superseded_total    counter: armings superseded before they ran
//	circulation_trigger_running                     gauge: 1 while a run is in flight
//	circulation_trigger_next_run_timestamp_seconds  gauge: when the next run is due, 0 if none is
//
// The histograms are fed by Observe, which the Trigger calls through
// WithObserver. The counters and gauges are read from the Trigger's Stats
// and Next at each scrape, so they are exact whatever the observer sees,
// and cost nothing between scrapes; they are exported once Watch has named
// the Trigger.
//
// A TriggerMetrics is a prometheus.Collector, safe for concurrent use.
// The trigger label is a constant label of each TriggerMetrics (as the
// client's DBStatsCollector labels each database), so one registry takes
// one TriggerMetrics per Trigger, each with its own name.
type TriggerMetrics struct {
	duration prometheus.Histogram
	lateness prometheus.Histogram
	trigger  atomic.Pointer[circulation.Trigger]

	runs, panics, fires, coalesced, superseded, running, next *prometheus.Desc
}

// NewTriggerMetrics returns the metrics of the Trigger called name, and
// registers them with reg. It panics if reg already has metrics by that
// name.
func NewTriggerMetrics(name string, reg prometheus.Registerer) *TriggerMetrics {
	labels := prometheus.Labels{"trigger": name}
	desc := func(metric, help string) *prometheus.Desc {
		return prometheus.NewDesc("circulation_trigger_"+metric, help, nil, labels)
	}
	m := &TriggerMetrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:        "circulation_trigger_run_duration_seconds",
			Help:        "How long each run of the Trigger's Func took, until it returned or panicked.",
			ConstLabels: labels,
			Buckets:     prometheus.DefBuckets,
		}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:        "circulation_trigger_run_lateness_seconds",
			Help:        "How long after its due time each run started.",
			ConstLabels: labels,
			Buckets:     LatenessBuckets,
		}),
		runs:       desc("runs_total", "Runs of the Trigger's Func begun."),
		panics:     desc("panics_total", "Runs that panicked or called runtime.Goexit."),
		fires:      desc("fires_total", "Calls of Fire, FireAfter and FireWithin that the Trigger took."),
		coalesced:  desc("fires_coalesced_total", "Fires that needed no arming of their own: they joined the run in flight or a pending arming."),
		superseded: desc("armings_superseded_total", "Armings superseded before they started the Func."),
		running:    desc("running", "1 while a run of the Func is in flight, else 0."),
		next:       desc("next_run_timestamp_seconds", "When the next run is due, in seconds since the Unix epoch; 0 if none is arranged."),
	}
	reg.MustRegister(m)
	return m
}

// Observe records a run's lateness when it starts and its duration when it
// ends. Pass it to WithObserver: circulation.WithObserver(m.Observe).
//
// Lateness is Start - Due, and zero if the run's due time is unknown or
// after its start (a step of the wall clock can make it look so).
func (m *TriggerMetrics) Observe(ev circulation.TriggerEvent) {
	switch ev.Kind {
	case circulation.RunStarted:
		var late time.Duration
		if !ev.Due.IsZero() {
			late = max(ev.Start.Sub(ev.Due), 0)
		}
		m.lateness.Observe(late.Seconds())
	case circulation.RunEnded:
		m.duration.Observe(ev.Duration.Seconds())
	}
}

// Watch makes the counters and gauges report tr's Stats and Next. tr must
// be the Trigger whose observer is m.Observe (or one made WithStats).
func (m *TriggerMetrics) Watch(tr *circulation.Trigger) { m.trigger.Store(tr) }

// Describe implements prometheus.Collector.
func (m *TriggerMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.duration.Describe(ch)
	m.lateness.Describe(ch)
	for _, d := range []*prometheus.Desc{m.runs, m.panics, m.fires, m.coalesced, m.superseded, m.running, m.next} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. It reads the Trigger's Stats,
// which takes no lock and never waits for a run.
func (m *TriggerMetrics) Collect(ch chan<- prometheus.Metric) {
	m.duration.Collect(ch)
	m.lateness.Collect(ch)
	tr := m.trigger.Load()
	if tr == nil {
		return
	}
	st := tr.Stats()
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	counter(m.runs, st.Runs)
	counter(m.panics, st.Panics)
	counter(m.fires, st.Fires)
	counter(m.coalesced, st.Coalesced)
	counter(m.superseded, st.Superseded)
	ch <- prometheus.MustNewConstMetric(m.running, prometheus.GaugeValue, boolValue(st.Running))
	var next float64
	if t := tr.Next(); !t.IsZero() {
		next = float64(t.UnixNano()) / 1e9
	}
	ch <- prometheus.MustNewConstMetric(m.next, prometheus.GaugeValue, next)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
