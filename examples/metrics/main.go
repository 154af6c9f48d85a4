// Command metrics exports what scheduled jobs, a Trigger and a Supervisor
// do to Prometheus, served by one registry. The jobs' metrics come from
// the module github.com/circulation-go/circulation/otel, on
// OpenTelemetry's API, exported through OpenTelemetry's Prometheus
// exporter: runs by status and reason, their duration and lateness, runs
// in flight, claims lost to another replica. The Trigger's and the
// Supervisor's come from two adapters on
// github.com/prometheus/client_golang, TriggerMetrics and
// SupervisorMetrics, small enough to copy into a service: run durations
// and lateness as histograms, fed by the Trigger's observer, and the
// counters of Stats, read at each scrape.
//
// The story: two replicas of a report job share a store; each of its
// slots, every 2 units, runs on one of them, and the other counts the
// claim it lost; the report of the third slot fails. A config-reload Trigger gets "update now" messages in a burst
// while it reloads (they coalesce into one more reload, which starts late,
// when the one in flight ends), has its pending reload superseded by a new
// interval, has a reload panic on a malformed configuration, and is
// stopped. Meanwhile a Supervisor keeps a registration alive against a
// registry that fails, hangs past the timeout, and finally answers that
// the registration is gone. The program serves /metrics on a loopback port,
// scrapes itself once at the end and prints the series: without the
// comments, and of each histogram only the buckets that count some runs
// the bucket before does not, unless -all is given. Every duration is a
// multiple of the unit, which -unit sets; the story lasts 13 units. It is
// a module of its own, so that the library needs no Prometheus:
//
//	cd examples/metrics && go run .
//	cd examples/metrics && go run . -unit 20ms -all
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/circulation-go/circulation"
	otelcirculation "github.com/circulation-go/circulation/otel"
	"github.com/circulation-go/circulation/schedule"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "metrics: %v (see -h)\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err = run(ctx, os.Stdout, cfg)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "metrics: %v\n", err)
		os.Exit(1)
	}
}

type config struct {
	unit time.Duration // every duration of the story is a multiple of it
	all  bool          // print the whole scrape, bucket lines, HELP and TYPE included

	// serve serves the metrics handler and returns its URL, a function
	// that scrapes it and one that shuts it down. nil means
	// serveLoopback; tests call the handler in memory.
	serve func(http.Handler) (url string, scrape func() (string, error), shutdown func(), err error)
}

const minUnit, maxUnit = 10 * time.Millisecond, 500 * time.Millisecond

// parseFlags parses the command line. It returns flag.ErrHelp, after
// printing the usage to stderr, if asked for help; any other error is for
// main to print in one line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := config{unit: 50 * time.Millisecond}
	fs := flag.NewFlagSet("metrics", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.DurationVar(&cfg.unit, "unit", cfg.unit,
		fmt.Sprintf("the story's time unit `d` (%v to %v); it lasts 13×d", minUnit, maxUnit))
	fs.BoolVar(&cfg.all, "all", false, "print the whole scrape, bucket lines included")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.unit < minUnit || cfg.unit > maxUnit {
		return cfg, fmt.Errorf("-unit must be between %v and %v, got %v", minUnit, maxUnit, cfg.unit)
	}
	return cfg, nil
}

// run tells the story, printing it to w, then scrapes the metrics and
// prints them.
func run(ctx context.Context, w io.Writer, cfg config) error {
	if cfg.serve == nil {
		cfg.serve = serveLoopback
	}
	u := cfg.unit
	log := &timeline{w: w, start: time.Now()}

	reg := prometheus.NewRegistry()
	stopJobs, closeMeters, err := startJobs(reg, u, log)
	if err != nil {
		return err
	}
	defer closeMeters()
	reloadMetrics := NewTriggerMetrics("config_reload", reg)
	registerMetrics := NewSupervisorMetrics("registration", reg)
	url, scrape, shutdown, err := cfg.serve(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if err != nil {
		return err
	}
	defer shutdown()
	log.printf("serving %s; the unit is %v", url, u)

	// The Trigger: each reload takes 2 units and asks for the next one 10
	// units later; the third finds a malformed configuration and panics.
	n := 0 // runs never overlap: no lock
	reload := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
		n++
		if n == 3 {
			sleep(ctx, u)
			panic("malformed configuration")
		}
		sleep(ctx, 2*u)
		return 10 * u, true
	},
		circulation.WithObserver(reloadMetrics.Observe),
		circulation.WithPanicHandler(func(p any) {
			log.printf("reload: the run panicked (%v); the Trigger rests until the next Fire", p)
		}))
	reloadMetrics.Watch(reload)

	// The Supervisor, on the same clock.
	sup := circulation.Supervise(registry(u), circulation.Backoff{
		Base:    2 * u,
		Retry:   u / 2,
		Max:     4 * u,
		Timeout: u,
	}, circulation.WithNotify(func(ev circulation.AttemptEvent) {
		registerMetrics.Notify(ev)
		line := fmt.Sprintf("registration: attempt %d: %v", ev.Attempt, ev.Outcome)
		if ev.Err != nil {
			line += ": " + ev.Err.Error()
		}
		if ev.Scheduled {
			line += fmt.Sprintf("; next in %v", ev.Next)
		}
		log.printf("%s", line)
	}))
	registerMetrics.Watch(sup)
	sup.Fire()

	story := []struct {
		at  time.Duration // in units since the start
		say string
		act func()
	}{
		// FireWithin rather than Fire: the Trigger's armings record due
		// times for FireWithin to compare from its first FireWithin on.
		{0, "reload: FireWithin(0): a reload starts at once", func() { reload.FireWithin(0) }},
		{1, "reload: 4 \"update now\" messages during the reload coalesce into one more, due now: it starts 1 unit late, when this one ends", func() {
			for range 4 {
				reload.Fire()
			}
		}},
		{5, "reload: the interval changes: FireAfter(3 units) supersedes the reload due at 14", func() { reload.FireAfter(3 * u) }},
		{6, "reload: FireWithin(5 units): the reload due at 8 is sooner, the call joins it", func() { reload.FireWithin(5 * u) }},
		{10, "reload: Fire: a reload after the panic", reload.Fire},
		{13, "reload: Stop supersedes the reload due at 22", nil},
	}
	for _, step := range story {
		if sleepUntil(ctx, log.start.Add(step.at*u)) != nil {
			log.printf("interrupted")
			break
		}
		log.printf("%s", step.say)
		if step.act != nil {
			step.act()
		}
	}
	stopErr := errors.Join(reload.Stop(context.Background()), sup.Close(context.Background()), stopJobs())

	body, err := scrape()
	if err != nil {
		return errors.Join(stopErr, err)
	}
	printMetrics(w, body, cfg.all)
	return stopErr
}

// startJobs starts the two replicas of the report job, which run every 2
// units on one store, with the hooks of otelcirculation, whose metrics
// OpenTelemetry's Prometheus exporter serves from reg. Each report takes
// 0.4 units; the third fails. It returns a function that stops the jobs,
// and one that shuts the MeterProvider down, after the last scrape.
func startJobs(reg *prometheus.Registry, u time.Duration, log *timeline) (stop func() error, closeMeters func(), err error) {
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	closeMeters = func() { _ = mp.Shutdown(context.Background()) }
	tel, err := otelcirculation.New(otelcirculation.WithMeterProvider(mp))
	if err != nil {
		closeMeters()
		return nil, nil, err
	}
	store := schedule.NewMemoryStore(100)
	var reports atomic.Int32
	report := func(ctx context.Context, r schedule.Run) error {
		n := reports.Add(1)
		sleep(ctx, 4*u/10)
		if n == 3 {
			return errors.New("the warehouse did not answer")
		}
		return nil
	}
	// The Observer of the replica that ran the slot prints it.
	observe := func(rec schedule.Record) {
		line := fmt.Sprintf("report: a slot ran: %v", rec.Status)
		if rec.Err != "" {
			line += ": " + rec.Err
		}
		log.printf("%s", line)
	}
	var jobs []*schedule.Job
	for _, node := range []string{"a", "b"} {
		j := schedule.NewJob("report", schedule.Every(2*u), report, schedule.WithStore(store), schedule.WithNode(node),
			schedule.WithObserver(observe), tel.JobOption())
		if err := j.Start(context.Background()); err != nil {
			closeMeters()
			return nil, nil, errors.Join(err, stopAll(jobs))
		}
		jobs = append(jobs, j)
	}
	return func() error { return stopAll(jobs) }, closeMeters, nil
}

// stopAll stops jobs.
func stopAll(jobs []*schedule.Job) error {
	var errs []error
	for _, j := range jobs {
		errs = append(errs, j.Stop(context.Background()))
	}
	return errors.Join(errs...)
}

// registry is the Supervisor's task, a scripted registration: it succeeds,
// fails, hangs past the timeout, succeeds, and finds the registration gone.
// Each attempt takes 0.4 units.
func registry(u time.Duration) func(context.Context) error {
	n := 0 // attempts never overlap: no lock
	return func(ctx context.Context) error {
		n++
		if n == 3 {
			<-ctx.Done() // hangs until the timeout cancels it
			return ctx.Err()
		}
		sleep(ctx, 4*u/10)
		switch n {
		case 2:
			return errors.New("registry: 503 Service Unavailable")
		case 5:
			return circulation.Permanent(errors.New("registry: 410 Gone"))
		}
		return nil
	}
}

// printMetrics prints the scrape: all of it, or the series without the
// comments and without the bucket lines that count nothing more than the
// bucket before them, so that each bucket printed holds some runs.
func printMetrics(w io.Writer, body string, all bool) {
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if all {
		fmt.Fprintf(w, "\nGET /metrics: %d lines\n%s", len(lines), body)
		return
	}
	var kept []string
	var series, count string // the bucket line before: its series without le, its count
	for _, l := range lines {
		if strings.HasPrefix(l, "#") {
			continue
		}
		if name, labels, ok := strings.Cut(l, "_bucket{"); ok {
			labels, c, _ := strings.Cut(labels, "} ")
			s := name + "{" + withoutLabel(labels, "le") + "}"
			if s == series && c == count || s != series && c == "0" {
				series, count = s, c
				continue
			}
			series, count = s, c
		}
		kept = append(kept, l)
	}
	fmt.Fprintf(w, "\nGET /metrics: %d lines; without comments and empty buckets (-all prints them all):\n%s\n",
		len(lines), strings.Join(kept, "\n"))
}

// withoutLabel returns the labels of a series, name="value" pairs separated
// by commas, without the one named name. No value here has a comma.
func withoutLabel(labels, name string) string {
	var kept []string
	for _, l := range strings.Split(labels, ",") {
		if !strings.HasPrefix(l, name+"=") {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, ",")
}

// serveLoopback serves h on a loopback port.
func serveLoopback(h http.Handler) (string, func() (string, error), func(), error) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := httptest.NewServer(mux)
	url := srv.URL + "/metrics"
	scrape := func() (string, error) {
		resp, err := srv.Client().Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return string(b), err
	}
	return url, scrape, srv.Close, nil
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	_ = sleepUntil(ctx, time.Now().Add(d))
}

// sleepUntil waits until t or until ctx is done, and returns ctx.Err().
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// timeline prints lines stamped with the time since it started.
type timeline struct {
	w     io.Writer
	start time.Time
	mu    sync.Mutex
}

func (l *timeline) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%6.3fs  %s\n", time.Since(l.start).Seconds(), fmt.Sprintf(format, args...))
}
