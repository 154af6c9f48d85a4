// Command heartbeat keeps thousands of simulated connections alive with
// heartbeats and times out their requests, all on one timing wheel, as
// Dubbo does with Netty's HashedWheelTimer.
//
// Each connection has two Triggers on the wheel, and every message fires
// one of them again: a write does beat.FireAfter(heartbeat), a read does
// idle.FireAfter(idleTimeout). The latest call wins, so each Trigger's
// pending timer is always the deadline counted from the last message, and
// its task runs only when that much time passes without one: beat sends a
// heartbeat (a write, so it returns heartbeat to go again), and idle
// closes the connection, whose peer is gone. Each request also arms a
// timeout on the wheel, stopped when the reply comes. Nearly every timer
// is thus stopped before it fires, which is what a wheel does in O(1).
//
// Of the connections, 60% are busy (a request every 50 to 150ms until
// 2.5s) and 40% quiet (heartbeats only); every tenth loses its peer at 1s.
// Every half second the program prints how many timers the wheel holds
// and has fired; at the end, how late its callbacks ran.
//
//	go run ./examples/heartbeat
//	go run ./examples/heartbeat -conns 20000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/wheel"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "heartbeat: %v (see -h)\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	_, err = run(ctx, os.Stdout, cfg)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "heartbeat: %v\n", err)
		os.Exit(1)
	}
}

type config struct {
	conns int // how many connections
}

const maxConns = 100_000

// parseFlags parses the command line. It returns flag.ErrHelp, after
// printing the usage to stderr, if asked for help; any other error is for
// main to print in one line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := config{conns: 5000}
	fs := flag.NewFlagSet("heartbeat", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&cfg.conns, "conns", cfg.conns, fmt.Sprintf("the number of connections, `n` (10 to %d)", maxConns))
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
	if cfg.conns < 10 || cfg.conns > maxConns {
		return cfg, fmt.Errorf("-conns must be between 10 and %d, got %d", maxConns, cfg.conns)
	}
	return cfg, nil
}

// The story's times, after the start.
const (
	heartbeat   = 200 * time.Millisecond // send a heartbeat after this long without a write
	idleTimeout = 3 * heartbeat          // close after this long without a read
	reqTimeout  = 100 * time.Millisecond // a request's timeout
	slowReply   = 150 * time.Millisecond // how long a slow reply takes: too long
	peersDie    = 1 * time.Second        // every tenth peer goes away
	quietAt     = 2500 * time.Millisecond
	end         = 2950 * time.Millisecond
	tick        = time.Millisecond // the wheel's
)

// report is what happened, for the tests.
type report struct {
	conns        []*conn
	armed, fired int64           // timers armed on the wheel, and callbacks started
	late         []time.Duration // how late each wheel callback started
	pending      int             // timers left on the wheel after every Trigger stopped
}

// run opens cfg.conns connections, lets them talk, stops them and prints
// what happened to w.
func run(ctx context.Context, w io.Writer, cfg config) (*report, error) {
	s := &sim{start: time.Now(), wheel: &meter{Wheel: wheel.New(wheel.WithTick(tick), wheel.WithSlots(512))}}
	fmt.Fprintf(w, "%d connections: heartbeat after %v without a write, close after %v without a read, requests time out after %v\n",
		cfg.conns, heartbeat, idleTimeout, reqTimeout)
	conns := make([]*conn, cfg.conns)
	for i := range conns {
		if i%(cfg.conns/10) == 0 { // open them in ten batches, 10ms apart
			_ = sleepUntil(ctx, s.start.Add(time.Duration(i*10/cfg.conns)*10*time.Millisecond))
		}
		conns[i] = s.open(i)
	}
	for at := 500 * time.Millisecond; at <= quietAt; at += 500 * time.Millisecond {
		if sleepUntil(ctx, s.start.Add(at)) != nil {
			break
		}
		s.status(w)
	}
	for _, c := range conns {
		c.quiet()
	}
	s.printf(w, "busy connections stop sending requests")
	if sleepUntil(ctx, s.start.Add(end)) == nil {
		s.status(w)
	}
	for _, c := range conns {
		c.stop()
	}
	s.network.Wait() // replies and heartbeat answers in flight
	r := &report{conns: conns, armed: s.wheel.armed.Load(), fired: s.wheel.fired.Load(), pending: s.wheel.Len()}
	s.printf(w, "every Trigger stopped: %d timers pending on the wheel", r.pending)
	s.wheel.Stop()
	r.late = s.wheel.lateness()
	summary(w, r)
	return r, nil
}

// sim is the simulation: the wheel, the clock and the totals.
type sim struct {
	start   time.Time
	wheel   *meter
	network sync.WaitGroup // messages in flight between a connection and its peer

	requests, timeouts, heartbeats, closed atomic.Int64
}

func (s *sim) now() time.Duration { return time.Since(s.start) }

func (s *sim) printf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "%6.3fs  %s\n", s.now().Seconds(), fmt.Sprintf(format, args...))
}

func (s *sim) status(w io.Writer) {
	s.printf(w, "wheel: %6d timers armed, %5d fired, %5d pending | %6d requests, %4d timed out | %5d heartbeats | %3d closed",
		s.wheel.armed.Load(), s.wheel.fired.Load(), s.wheel.Len(), s.requests.Load(), s.timeouts.Load(), s.heartbeats.Load(), s.closed.Load())
}

func summary(w io.Writer, r *report) {
	var dead, closedDead, closedLive int
	quiet := time.Duration(1<<63 - 1)
	var quietest time.Duration
	for _, c := range r.conns {
		if c.diesAt != 0 {
			dead++
		}
		switch {
		case c.closedAt == 0:
		case c.diesAt == 0:
			closedLive++
		default:
			closedDead++
			d := c.closedAt - c.lastRead
			quiet, quietest = min(quiet, d), max(quietest, d)
		}
	}
	fmt.Fprintf(w, "closed %d of the %d connections whose peer went away, %v to %v after their last read; closed %d live ones\n",
		closedDead, dead, quiet.Round(time.Microsecond), quietest.Round(time.Microsecond), closedLive)
	late := slices.Clone(r.late)
	slices.Sort(late)
	if len(late) > 0 {
		q := func(p float64) time.Duration { return late[int(p*float64(len(late)-1))].Round(time.Microsecond) }
		fmt.Fprintf(w, "%d wheel callbacks ran late by p50 %v, p99 %v, max %v\n", len(late), q(0.5), q(0.99), q(1))
	}
}

// open opens connection i: its peer answers until it goes away, and a busy
// one sends requests.
func (s *sim) open(i int) *conn {
	now := s.now()
	c := &conn{s: s, opened: now, busy: i%10 >= 4, pending: map[uint64]circulation.Timer{}}
	if i%10 == 0 {
		c.diesAt = peersDie
	}
	c.beat = circulation.Bind(s.wheel, c.sendHeartbeat)
	c.idle = circulation.Bind(s.wheel, c.closeIdle)
	if c.busy {
		c.talk = circulation.Bind(nil, c.request) // the application's own timing
	}
	c.mu.Lock()
	c.wrote(now) // the handshake counts as a write and a read
	c.read(now)
	if c.busy {
		c.talk.FireAfter(pause())
	}
	c.mu.Unlock()
	return c
}

// pause is the time a busy connection waits between two requests.
func pause() time.Duration { return 50*time.Millisecond + rand.N(100*time.Millisecond) }

// A conn is one connection and, on the other end of it, a simulated peer.
type conn struct {
	s      *sim
	opened time.Duration
	busy   bool
	diesAt time.Duration        // when the peer goes away; 0: never
	beat   *circulation.Trigger // sends a heartbeat when nothing was written for heartbeat; on the wheel
	idle   *circulation.Trigger // closes the connection when nothing was read for idleTimeout; on the wheel
	talk   *circulation.Trigger // requests, on the runtime's timers; nil if not busy

	// mu makes each message and its FireAfter one step, which close
	// cannot split: once closed, a connection fires nothing again.
	mu        sync.Mutex
	lastRead  time.Duration
	lastWrite time.Duration
	pending   map[uint64]circulation.Timer // requests awaiting a reply, with their timeouts
	nextID    uint64
	closed    bool
	closedAt  time.Duration // when the idle Trigger closed it; 0 if it did not
	stats     connStats
}

type connStats struct {
	requests, answered, timedOut, cancelled, late int // what happened to the requests
	slow, dropped                                 int // what the peer did with them
	heartbeats, heartbeatsWhileTalking            int
	offBeat                                       int // heartbeats sent later than heartbeat (and a tick) after the last write
}

// wrote records a write: the heartbeat is due heartbeat from now. The
// latest call wins, so the one that was pending is simply replaced.
// c.mu is held.
func (c *conn) wrote(now time.Duration) {
	c.lastWrite = now
	c.beat.FireAfter(heartbeat)
}

// read records a read: the peer is alive, so the connection is idle only
// if nothing else comes for idleTimeout. c.mu is held.
func (c *conn) read(now time.Duration) {
	c.lastRead = now
	c.idle.FireAfter(idleTimeout)
}

// sendHeartbeat is the beat Trigger's task. It runs only when nothing was
// written for heartbeat; the heartbeat is itself a write, so it runs again
// after heartbeat unless something else is written first.
func (c *conn) sendHeartbeat(context.Context) (time.Duration, bool) {
	now := c.s.now()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, false
	}
	since := now - c.lastWrite
	if since < heartbeat {
		// A write came as this run began. Its FireAfter superseded this
		// run, so what it returns is ignored: nothing to do.
		c.mu.Unlock()
		return 0, false
	}
	if since > heartbeat+tick {
		c.stats.offBeat++
	}
	c.stats.heartbeats++
	if c.busy && now < quietAt {
		c.stats.heartbeatsWhileTalking++
	}
	c.lastWrite = now
	c.mu.Unlock()
	c.s.heartbeats.Add(1)
	c.send(now, 0)
	return heartbeat, true
}

// closeIdle is the idle Trigger's task. It runs only when nothing was
// read for idleTimeout: the peer is gone.
func (c *conn) closeIdle(context.Context) (time.Duration, bool) {
	if c.close() {
		c.closedAt = c.s.now() // read once the Trigger has stopped
		c.s.closed.Add(1)
	}
	return 0, false
}

// request is the talk Trigger's task: send a request with a timeout on the
// wheel, then wait a while.
func (c *conn) request(context.Context) (time.Duration, bool) {
	now := c.s.now()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, false
	}
	c.nextID++
	id := c.nextID
	c.stats.requests++
	c.pending[id] = c.s.wheel.AfterFunc(reqTimeout, func() { c.timeout(id) })
	c.wrote(now)
	c.mu.Unlock()
	c.s.requests.Add(1)
	c.send(now, id)
	return pause(), true
}

// timeout is a request's timeout, on the wheel.
func (c *conn) timeout(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pending[id]; ok {
		delete(c.pending, id)
		c.stats.timedOut++
		c.s.timeouts.Add(1)
	}
}

// send passes request id (0: a heartbeat) to the peer, which answers it
// after a while unless it has gone away. One request in 50 gets a reply
// too slow for its timeout.
func (c *conn) send(now time.Duration, id uint64) {
	if c.diesAt != 0 && now >= c.diesAt {
		if id != 0 {
			c.mu.Lock()
			c.stats.dropped++
			c.mu.Unlock()
		}
		return
	}
	delay := time.Millisecond + rand.N(19*time.Millisecond)
	if id != 0 && rand.N(50) == 0 {
		delay = slowReply
		c.mu.Lock()
		c.stats.slow++
		c.mu.Unlock()
	}
	c.s.network.Add(1)
	time.AfterFunc(delay, func() {
		defer c.s.network.Done()
		c.receive(id)
	})
}

// receive takes the peer's answer to request id (0: a heartbeat).
func (c *conn) receive(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.read(c.s.now())
	if id == 0 {
		return
	}
	if t, ok := c.pending[id]; ok {
		delete(c.pending, id)
		t.Stop()
		c.stats.answered++
	} else {
		c.stats.late++ // its timeout came first
	}
}

// close closes the connection, if it is open, and reports whether it
// did: its requests fail, and nothing fires its Triggers again.
func (c *conn) close() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.closed = true
	for id, t := range c.pending {
		t.Stop()
		delete(c.pending, id)
		c.stats.cancelled++
	}
	c.beat.Suspend()
	if c.talk != nil {
		c.talk.Suspend()
	}
	return true
}

// quiet stops a busy connection's requests.
func (c *conn) quiet() {
	if c.talk != nil {
		c.talk.Suspend()
	}
}

// stop closes the connection, then stops its Triggers and waits for their
// runs. In that order: a stopped Trigger can be fired again, and a reply
// still in flight would fire idle if the connection were open.
func (c *conn) stop() {
	c.close()
	if c.talk != nil {
		_ = c.talk.Stop(context.Background()) // never fails with Background
	}
	_ = c.beat.Stop(context.Background())
	_ = c.idle.Stop(context.Background())
}

// meter is the wheel as the connections see it: a circulation.Scheduler
// that counts the callbacks and records how late each one started.
type meter struct {
	*wheel.Wheel
	armed, fired atomic.Int64

	mu   sync.Mutex
	late []time.Duration
}

func (m *meter) AfterFunc(d time.Duration, f func()) circulation.Timer {
	due := time.Now().Add(d)
	m.armed.Add(1)
	return m.Wheel.AfterFunc(d, func() {
		late := time.Since(due)
		m.fired.Add(1)
		m.mu.Lock()
		m.late = append(m.late, late)
		m.mu.Unlock()
		f()
	})
}

func (m *meter) lateness() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.late)
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
