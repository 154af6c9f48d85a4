// Package keepalive is a small library built on circulation, as a user of
// circulation would write one, and keepalive_test.go shows how such code is
// tested: exactly and instantly on testing/synctest's fake clock, with
// goleak catching a forgotten Stop.
//
// A Heartbeat pings a peer when a connection has been quiet for a while; a
// Registration keeps a service registered, retrying with backoff.
package keepalive

import (
	"context"
	"time"

	"github.com/circulation-go/circulation"
)

// A Heartbeat calls ping whenever a connection has been quiet for its
// interval: every message seen on the connection postpones the next ping.
// Its methods are safe for concurrent use; ping never runs twice at once.
type Heartbeat struct {
	interval time.Duration
	t        *circulation.Trigger
}

// NewHeartbeat returns a Heartbeat that calls ping interval after the last
// message or ping. It starts idle: nothing happens until Start. ping gets a
// context that Close cancels.
func NewHeartbeat(interval time.Duration, ping func(ctx context.Context)) *Heartbeat {
	return &Heartbeat{
		interval: interval,
		t: circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
			ping(ctx)
			return interval, true // and again after interval, unless a message comes first
		}),
	}
}

// Start arms the first ping, interval from now.
func (h *Heartbeat) Start() { h.t.FireAfter(h.interval) }

// Seen records a message on the connection: the next ping is interval from
// now.
func (h *Heartbeat) Seen() { h.t.FireAfter(h.interval) }

// PingNow pings at once, or right after the ping in flight.
func (h *Heartbeat) PingNow() { h.t.Fire() }

// Close stops the pings for good, even if Seen or PingNow is called later:
// it cancels a ping in flight and waits for it to return, or returns
// ctx.Err() if ctx is done first.
func (h *Heartbeat) Close(ctx context.Context) error { return h.t.Close(ctx) }

// A Registration keeps a service registered: it calls register at once,
// then again after each success or failure as its policy says, until
// Close, or until register returns an error wrapped by
// circulation.Permanent.
type Registration struct {
	s *circulation.Supervisor
}

// Register starts calling register under the policy b.
func Register(register func(ctx context.Context) error, b circulation.Backoff) *Registration {
	r := &Registration{s: circulation.Supervise(register, b)}
	r.s.Fire()
	return r
}

// Err returns the permanent error that stopped the registration, or nil.
func (r *Registration) Err() error { return r.s.Err() }

// Close stops the registration: it cancels an attempt in flight and waits
// for it to return, or returns ctx.Err() if ctx is done first.
func (r *Registration) Close(ctx context.Context) error { return r.s.Stop(ctx) }
