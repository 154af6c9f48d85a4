// Command configreload tells the story circulation was designed for.
//
// A service keeps its configuration fresh by pulling it from a config
// center every interval. An "update now" message asks for a pull at once;
// such messages come in bursts, delivered by several consumer goroutines.
// A feature switch turns the pulling off and on and changes its interval
// while it runs. By hand this takes a timer, two mutexes and care; here
// it is one Trigger, and the program shows what it guarantees:
//
//   - bursts coalesce: the messages that arrive during a pull make exactly
//     one more pull, after it;
//   - pulls never overlap, and never come back to back: WithMinInterval
//     starts them at least a quarter of the interval apart, so the config
//     center, which counts them in flight, gets a breath between two;
//   - the latest configuration wins: a version published during a pull is
//     fetched by the pull that follows it;
//   - the switch acts at once, with no lock of its own: the switch is the
//     Trigger. Off is Close, which cancels the pull in flight and makes
//     every later Fire do nothing, however it races with the consumers; on
//     is a new Trigger. A new interval replaces the pending pull
//     (FireAfter).
//
// The config center is an HTTP server on a loopback port that the program
// starts itself; it answers slowly, as a busy service would. The story is
// timed in units of the interval and lasts 5.5 of them:
//
//	go run ./examples/configreload
//	go run ./examples/configreload -interval 300ms
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/circulation-go/circulation"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "configreload: %v (see -h)\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	_, err = run(ctx, os.Stdout, cfg)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "configreload: %v\n", err)
		os.Exit(1)
	}
}

type config struct {
	interval time.Duration // the pull period; the story is timed in units of it

	// connect makes the config center reachable and returns a client for
	// it, its URL and a function that shuts it down. nil means
	// serveLoopback; tests connect the client to the handler in memory.
	connect func(http.Handler) (client *http.Client, url string, shutdown func(), err error)
}

const minInterval, maxInterval = 100 * time.Millisecond, 1500 * time.Millisecond

// parseFlags parses the command line. It returns flag.ErrHelp, after
// printing the usage to stderr, if asked for help; any other error is for
// main to print in one line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := config{interval: time.Second}
	fs := flag.NewFlagSet("configreload", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.DurationVar(&cfg.interval, "interval", cfg.interval,
		fmt.Sprintf("pull the configuration every `d` (%v to %v); the story lasts 5.5×d", minInterval, maxInterval))
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
	if cfg.interval < minInterval || cfg.interval > maxInterval {
		return cfg, fmt.Errorf("-interval must be between %v and %v, got %v", minInterval, maxInterval, cfg.interval)
	}
	return cfg, nil
}

// report is what happened, for the summary and the tests.
type report struct {
	pulls       []pull
	messages    int   // "update now" messages delivered
	ignored     int   // of which, ignored because the switch was off
	maxInFlight int32 // the most pulls the config center saw at once
	inUse       int64 // the version in use at the end
	latest      int64 // the latest version published
}

// pull is one run of the pulling task.
type pull struct {
	start, end time.Duration // since the story began
	why        string
	version    int64 // the version fetched; 0 if the pull failed
	err        error
}

// run tells the story, printing it to w, and returns what happened.
func run(ctx context.Context, w io.Writer, cfg config) (*report, error) {
	if cfg.connect == nil {
		cfg.connect = serveLoopback
	}
	u := cfg.interval
	log := &timeline{w: w, start: time.Now()}
	center := &configCenter{latency: u / 5}
	center.version.Store(1)
	client, url, shutdown, err := cfg.connect(center)
	if err != nil {
		return nil, err
	}
	defer shutdown()
	log.printf("config center at %s serves version 1; each pull takes %v", url, center.latency)

	l := &loader{log: log, client: client, url: url, interval: u, gap: u / 4}

	var consumers sync.WaitGroup
	publish := func(version int64, copies int) {
		center.version.Store(version)
		log.printf("config center: version %d published; %d consumers get \"update now\"", version, copies)
		for i := range copies {
			consumers.Go(func() {
				time.Sleep(time.Duration(i) * u / 100)
				l.updateNow(i + 1)
			})
		}
	}
	story := []struct {
		at  time.Duration // in hundredths of an interval since the start
		act func()
	}{
		{0, l.switchOn},
		{150, func() { publish(2, 3) }},
		{156, func() { publish(3, 3) }}, // while version 2 is being pulled
		{200, func() { l.setInterval(u / 2) }},
		{400, func() { _ = l.switchOff(true) }}, // in the middle of a pull
		{450, func() { publish(4, 2) }},
		{500, l.switchOn},
		{550, nil}, // the end
	}
	for _, step := range story {
		if sleepUntil(ctx, log.start.Add(step.at*u/100)) != nil {
			log.printf("interrupted")
			break
		}
		if step.act != nil {
			step.act()
		}
	}
	log.printf("shutting down: Close cancels a pull in flight and waits for it; later messages do nothing")
	stopErr := l.switchOff(false)
	consumers.Wait()

	r := &l.report // Close and Wait have returned: nothing writes it any more
	r.maxInFlight, r.inUse, r.latest = center.maxInFlight.Load(), l.inUse.Load(), center.version.Load()
	cancelled := 0
	for _, p := range r.pulls {
		if p.err != nil {
			cancelled++
		}
	}
	fmt.Fprintf(w, "\n%d pulls, %d cancelled; %d \"update now\" messages, %d ignored while the switch was off\n",
		len(r.pulls), cancelled, r.messages, r.ignored)
	fmt.Fprintf(w, "the config center saw at most %d pull at a time; in use: version %d, latest: version %d\n",
		r.maxInFlight, r.inUse, r.latest)
	return r, stopErr
}

// loader keeps the configuration in use fresh. Its Trigger runs pull; the
// switch and the message consumers drive the Trigger.
type loader struct {
	log    *timeline
	client *http.Client
	url    string
	gap    time.Duration // the least time between the starts of two pulls
	inUse  atomic.Int64  // the configuration version in use

	// reload is the switch: a Trigger while the switch is on, closed when
	// it goes off (a consumer that loaded it just before then fires a
	// closed Trigger, which does nothing), nil while it is off.
	reload atomic.Pointer[circulation.Trigger]

	// mu guards the bookkeeping of the story: the report, and what the
	// next pull is for. The switch needs no lock.
	mu       sync.Mutex
	interval time.Duration
	reason   string // why the Trigger was last fired, other than by messages
	messages int    // "update now" messages since the last pull began
	active   int    // the number of the pull in flight, or 0
	report   report
}

// pull is the Trigger's task: fetch the configuration, then ask to run
// again after the interval. The Trigger never runs it twice at once.
func (l *loader) pull(ctx context.Context) (time.Duration, bool) {
	start := time.Since(l.log.start)
	l.mu.Lock()
	n := len(l.report.pulls) + 1
	why := l.why()
	l.reason, l.messages, l.active = "", 0, n
	l.report.pulls = append(l.report.pulls, pull{start: start, why: why})
	interval := l.interval
	l.mu.Unlock()
	l.log.printf("pull %d starts (%s)", n, why)

	version, err := fetch(ctx, l.client, l.url)
	if ctx.Err() != nil {
		err = ctx.Err() // Close: the result would be ignored anyway
	}
	l.mu.Lock()
	p := &l.report.pulls[n-1]
	p.end, p.version, p.err = time.Since(l.log.start), version, err
	l.active = 0
	l.mu.Unlock()
	if err != nil {
		l.log.printf("pull %d stopped after %v: %v", n, (p.end - p.start).Round(time.Millisecond), err)
		return interval, true // try again later; ignored if Close ended this run
	}
	l.inUse.Store(version)
	l.log.printf("pull %d got version %d", n, version)
	return interval, true
}

// why says what made the pull that is starting run. l.mu is held.
func (l *loader) why() string {
	var why []string
	if l.reason != "" {
		why = append(why, l.reason)
	}
	switch {
	case l.messages == 1:
		why = append(why, "1 update message")
	case l.messages > 1:
		why = append(why, fmt.Sprintf("%d update messages", l.messages))
	}
	if len(why) == 0 {
		return "timer"
	}
	return strings.Join(why, ", ")
}

// updateNow is what consumer i does with an "update now" message.
func (l *loader) updateNow(i int) {
	tr := l.reload.Load()
	l.mu.Lock()
	l.report.messages++
	switch {
	case tr == nil:
		l.report.ignored++
		l.log.printf("consumer %d: update now: ignored, the switch is off", i)
	case l.active != 0:
		l.messages++
		l.log.printf("consumer %d: update now: Fire (pull %d is running: one more pull follows it, %v after its start at the earliest)", i, l.active, l.gap)
	default:
		l.messages++
		l.log.printf("consumer %d: update now: Fire", i)
	}
	l.mu.Unlock()
	if tr != nil {
		tr.Fire() // does nothing if the switch went off since the Load
	}
}

func (l *loader) switchOn() {
	l.mu.Lock()
	l.reason = "switch on"
	l.log.printf("switch on, every %v, at least %v between the starts of two pulls: Fire", l.interval, l.gap)
	l.mu.Unlock()
	tr := circulation.Bind(nil, l.pull, circulation.WithMinInterval(l.gap))
	l.reload.Store(tr)
	tr.Fire()
}

// switchOff closes the Trigger: the pull in flight is cancelled, Close
// waits for it, and every later Fire does nothing.
func (l *loader) switchOff(say bool) error {
	tr := l.reload.Swap(nil)
	if tr == nil {
		return nil
	}
	if say {
		l.log.printf("switch off: Close")
	}
	return tr.Close(context.Background())
}

func (l *loader) setInterval(d time.Duration) {
	l.mu.Lock()
	l.log.printf("switch: interval %v -> %v: FireAfter(%v) replaces the pending pull", l.interval, d, d)
	l.interval = d
	l.reason = "new interval"
	l.mu.Unlock()
	if tr := l.reload.Load(); tr != nil {
		tr.FireAfter(d)
	}
}

// fetch asks the config center for the current version.
func fetch(ctx context.Context, client *http.Client, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/config", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("config center: %s", resp.Status)
	}
	var body struct{ Version int64 }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, err
	}
	return body.Version, nil
}

// configCenter serves the current configuration version. Each request
// reads the version when it arrives and answers after latency, or gives up
// when the client goes away. It counts the requests in flight.
type configCenter struct {
	latency     time.Duration
	version     atomic.Int64
	inFlight    atomic.Int32
	maxInFlight atomic.Int32
}

func (c *configCenter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	for m := c.maxInFlight.Load(); n > m && !c.maxInFlight.CompareAndSwap(m, n); m = c.maxInFlight.Load() {
	}
	v := c.version.Load()
	if sleepUntil(r.Context(), time.Now().Add(c.latency)) != nil {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct{ Version int64 }{v})
}

// serveLoopback serves h on a loopback port.
func serveLoopback(h http.Handler) (*http.Client, string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	transport := &http.Transport{}
	shutdown := func() {
		transport.CloseIdleConnections()
		_ = srv.Close()
		<-served
	}
	return &http.Client{Transport: transport}, "http://" + ln.Addr().String(), shutdown, nil
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
