// Command writebehind is a write-behind cache: writes land in memory at
// once and reach a slow database in batches, on one Trigger.
//
//   - A batch is flushed no later than -maxwait after its first write:
//     every write calls FireWithin(maxWait), from any number of
//     goroutines, and the earliest deadline wins, so later writes ride on
//     the first one's instead of postponing it.
//   - A batch that fills up is flushed at once: FireWithin(0) beats the
//     pending deadline.
//   - Flushes never overlap, and start at least -mingap apart
//     (WithMinInterval), so a burst cannot hammer the database.
//   - Close flushes what is pending at once (Shutdown) and refuses later
//     writes: each write either reaches the database or gets ErrClosed.
//
// There is no mutex in the cache: the dirty entries are a sync.Map, the
// Trigger does the timing, and Close waits for the writes in progress with
// a counter. The database is simulated; the story is
// timed in units of -unit and lasts 12 of them:
//
//	go run ./examples/writebehind
//	go run ./examples/writebehind -unit 300ms
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sort"
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
		fmt.Fprintf(os.Stderr, "writebehind: %v (see -h)\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	_, err = run(ctx, os.Stdout, cfg)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "writebehind: %v\n", err)
		os.Exit(1)
	}
}

type config struct {
	unit time.Duration // the story's time unit: the database takes one to write a batch
}

const minUnit, maxUnit = 10 * time.Millisecond, 500 * time.Millisecond

// parseFlags parses the command line. It returns flag.ErrHelp, after
// printing the usage to stderr, if asked for help; any other error is for
// main to print in one line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := config{unit: 100 * time.Millisecond}
	fs := flag.NewFlagSet("writebehind", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.DurationVar(&cfg.unit, "unit", cfg.unit,
		fmt.Sprintf("the story's time unit `d` (%v to %v): a batch takes one to write; the story lasts 12", minUnit, maxUnit))
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

// ErrClosed is what Put returns once the cache is closed.
var ErrClosed = errors.New("writebehind: cache closed")

// Cache holds writes in memory and flushes them to its database in
// batches. Its methods are safe for concurrent use.
type Cache struct {
	db      Database
	maxWait time.Duration
	batch   int // a batch this full is flushed at once
	dirty   sync.Map
	count   atomic.Int64 // keys in dirty, about
	closed  atomic.Bool
	puts    atomic.Int64 // Puts in progress
	flusher *circulation.Trigger
	onFlush func(n int, batch []string) // reports each flush, for the story
	flushes atomic.Int64
}

// A Database stores batches of writes. Write is never called concurrently
// by one Cache.
type Database interface {
	Write(ctx context.Context, batch map[string]string) error
}

// NewCache returns a Cache that flushes to db no later than maxWait after
// the first write of a batch, at once when a batch reaches size keys, and
// never sooner than minGap after the previous flush began.
func NewCache(db Database, maxWait, minGap time.Duration, size int) *Cache {
	c := &Cache{db: db, maxWait: maxWait, batch: size}
	c.flusher = circulation.Bind(nil, c.flush, circulation.WithMinInterval(minGap))
	return c
}

// Put writes key, or returns ErrClosed, having written nothing, if the
// cache is closed.
func (c *Cache) Put(key, value string) error {
	// Put counts itself in before it looks at closed, and Close sets
	// closed before it waits for the count to drop to zero: either Put
	// sees the cache closed, or Close waits until the entry is stored.
	c.puts.Add(1)
	defer c.puts.Add(-1)
	if c.closed.Load() {
		return ErrClosed
	}
	if _, loaded := c.dirty.Swap(key, value); !loaded {
		c.count.Add(1)
	}
	if c.count.Load() >= int64(c.batch) {
		c.flusher.FireWithin(0)
	} else {
		c.flusher.FireWithin(c.maxWait)
	}
	return nil
}

// flush is the Trigger's Func: it writes what is dirty, then forgets each
// entry unless a newer write replaced it meanwhile (that one stays dirty,
// and its own FireWithin brings the next flush).
func (c *Cache) flush(ctx context.Context) (time.Duration, bool) {
	c.drain(ctx)
	return 0, false
}

// drain writes what is dirty. The Trigger never runs it twice at once.
func (c *Cache) drain(ctx context.Context) {
	batch := map[string]string{}
	c.dirty.Range(func(k, v any) bool {
		batch[k.(string)] = v.(string)
		return true
	})
	n := int(c.flushes.Add(1))
	keys := make([]string, 0, len(batch))
	for k := range batch {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if c.onFlush != nil {
		c.onFlush(n, keys)
	}
	if len(batch) == 0 {
		return
	}
	if err := c.db.Write(ctx, batch); err != nil {
		c.flusher.FireWithin(c.maxWait) // keep the batch; try again
		return
	}
	for k, v := range batch {
		if c.dirty.CompareAndDelete(k, v) {
			c.count.Add(-1)
		}
	}
}

// Close refuses later writes, flushes what is pending at once, and waits
// for it. It returns ctx.Err() if ctx ends first.
func (c *Cache) Close(ctx context.Context) error {
	c.closed.Store(true)
	for c.puts.Load() != 0 {
		runtime.Gosched() // a Put that saw the cache open is storing its entry: it never blocks
	}
	// Every accepted write is stored now: the Trigger's last flush takes
	// them, at once, and nothing runs after it.
	return c.flusher.Shutdown(ctx)
}

// slowDB is a simulated database: each batch takes latency to write. It
// remembers what it stored and notices overlapping writes.
type slowDB struct {
	latency  time.Duration
	mu       sync.Mutex
	stored   map[string]string
	batches  []int
	inflight int
	overlaps int
}

func (db *slowDB) Write(ctx context.Context, batch map[string]string) error {
	db.mu.Lock()
	db.inflight++
	if db.inflight > 1 {
		db.overlaps++
	}
	db.mu.Unlock()
	time.Sleep(db.latency)
	db.mu.Lock()
	defer db.mu.Unlock()
	db.inflight--
	for k, v := range batch {
		db.stored[k] = v
	}
	db.batches = append(db.batches, len(batch))
	return nil
}

// report is what happened, for the summary and the tests.
type report struct {
	flushes  []flush
	accepted map[string]string // writes Put accepted: key -> latest value
	refused  []string          // keys Put refused with ErrClosed
	stored   map[string]string
	overlaps int
}

type flush struct {
	at   time.Duration
	keys []string
}

// run tells the story, printing it to w, and returns what happened.
func run(ctx context.Context, w io.Writer, cfg config) (*report, error) {
	u := cfg.unit
	start := time.Now()
	since := func() time.Duration { return time.Since(start) }
	var outMu sync.Mutex
	printf := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(w, "%5.1fu  %s\n", float64(since())/float64(u), fmt.Sprintf(format, args...))
	}
	db := &slowDB{latency: u, stored: map[string]string{}}
	const size = 8
	cache := NewCache(db, 5*u, 3*u, size)
	r := &report{accepted: map[string]string{}}
	var rmu sync.Mutex
	cache.onFlush = func(n int, keys []string) {
		rmu.Lock()
		r.flushes = append(r.flushes, flush{at: since(), keys: keys})
		rmu.Unlock()
		printf("flush %d: %s", n, brief(keys))
	}
	fmt.Fprintf(w, "a write-behind cache: flush within 5u of a batch's first write, at once at %d keys, flushes at least 3u apart; a batch takes 1u to write (u = %v)\n", size, u)

	put := func(key, value string) {
		err := cache.Put(key, value)
		rmu.Lock()
		defer rmu.Unlock()
		if err != nil {
			r.refused = append(r.refused, key)
			printf("put %s: %v", key, err)
			return
		}
		r.accepted[key] = value
	}
	story := []struct {
		at  float64 // in units since the start
		say string
		act func()
	}{
		{0, "put user:1: the batch is due by 5u", func() { put("user:1", "a") }},
		{1, "put user:2, user:3: they ride on user:1's deadline", func() { put("user:2", "b"); put("user:3", "c") }},
		{5.5, "put user:4 while flush 1 writes: due by 10.5u", func() { put("user:4", "d") }},
		{7, "a burst of 8 writes from 4 goroutines: the batch is full, FireWithin(0), but flush 1 began at 5u: flush 2 waits for 8u", func() {
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := range 2 {
						put(fmt.Sprintf("order:%d", 10+2*g+i), "new")
					}
				})
			}
			wg.Wait()
		}},
		{9, "put user:1 again: due by 14u", func() { put("user:1", "e") }},
		{10, "Close: the pending batch is flushed now, not at 14u", func() {
			if err := cache.Close(context.Background()); err != nil {
				printf("close: %v", err)
			}
			printf("closed")
		}},
		{11.5, "put user:5 after Close", func() { put("user:5", "f") }},
		{12, "", nil},
	}
	for _, step := range story {
		if sleepUntil(ctx, start.Add(time.Duration(step.at*float64(u)))) != nil {
			printf("interrupted")
			break
		}
		if step.say != "" {
			printf("%s", step.say)
		}
		if step.act != nil {
			step.act()
		}
	}
	err := cache.Close(context.Background()) // again, after an interrupt; a no-op otherwise
	db.mu.Lock()
	r.stored, r.overlaps = db.stored, db.overlaps
	db.mu.Unlock()
	lost := 0
	for k, v := range r.accepted {
		if r.stored[k] != v {
			lost++
		}
	}
	fmt.Fprintf(w, "\n%d flushes; %d keys stored, %d writes refused after Close, %d accepted writes lost, %d overlapping database writes\n",
		len(r.flushes), len(r.stored), len(r.refused), lost, r.overlaps)
	return r, err
}

// brief counts and lists keys, shortened when there are many.
func brief(keys []string) string {
	list := strings.Join(keys, " ")
	if len(keys) > 4 {
		list = strings.Join(keys[:3], " ") + fmt.Sprintf(" ... %d more", len(keys)-3)
	}
	if len(keys) == 1 {
		return "1 key [" + list + "]"
	}
	return fmt.Sprintf("%d keys [%s]", len(keys), list)
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
