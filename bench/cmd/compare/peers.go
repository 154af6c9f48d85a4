package main

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeromicro/go-zero/core/collection"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/wheel"
)

// A scheduler is one implementation under test: a circulation.Scheduler
// that can be shut down.
type scheduler interface {
	circulation.Scheduler
	Close()
}

// impls are the implementations compare knows, by name, each made with the
// given resolution (the runtime's timers have none to set). RussellLuo's
// timingwheel and antlabs/timer are not here: the Go module proxy answers
// 403 for both.
var impls = map[string]func(tick time.Duration) scheduler{
	"std": func(time.Duration) scheduler { return stdScheduler{} },
	"wheel": func(tick time.Duration) scheduler {
		return wheelScheduler{wheel.New(wheel.WithTick(tick))}
	},
	"go-zero": newGoZero,
	// Variants of the wheel that decided its design (see wheel/DESIGN.md):
	// callbacks on the wheel's goroutine (inline), a goroutine per
	// callback (go), a fixed pool of 8 workers (pool), one shard, other
	// numbers of slots per level.
	"wheel-inline": func(tick time.Duration) scheduler {
		return wheelScheduler{wheel.New(wheel.WithTick(tick), wheel.WithInlineCallbacks())}
	},
	"wheel-pool": newWheelPool,
	"rounds":     newRounds,
	"wheel-go": func(tick time.Duration) scheduler {
		return wheelGo{wheelScheduler{wheel.New(wheel.WithTick(tick), wheel.WithInlineCallbacks())}}
	},
	"wheel-1shard": func(tick time.Duration) scheduler {
		return wheelScheduler{wheel.New(wheel.WithTick(tick), wheel.WithShards(1))}
	},
	"wheel-64slots": func(tick time.Duration) scheduler {
		return wheelScheduler{wheel.New(wheel.WithTick(tick), wheel.WithSlots(64))}
	},
	"wheel-4096slots": func(tick time.Duration) scheduler {
		return wheelScheduler{wheel.New(wheel.WithTick(tick), wheel.WithSlots(4096))}
	},
}

// implOrder is the order of the table's columns.
var implOrder = []string{"std", "wheel", "go-zero"}

type stdScheduler struct{ circulation.RuntimeScheduler }

func (stdScheduler) Close() {}

type wheelScheduler struct{ *wheel.Wheel }

func (w wheelScheduler) Close() { w.Stop() }

// wheelPool runs callbacks on a fixed set of workers fed by the wheel's
// goroutine, as a bounded pool inside the wheel would.
type wheelPool struct {
	*wheel.Wheel
	work chan func()
	wg   sync.WaitGroup
}

func newWheelPool(tick time.Duration) scheduler {
	p := &wheelPool{
		Wheel: wheel.New(wheel.WithTick(tick), wheel.WithInlineCallbacks()),
		work:  make(chan func(), 1024),
	}
	for range 8 {
		p.wg.Go(func() {
			for f := range p.work {
				f()
			}
		})
	}
	return p
}

func (p *wheelPool) AfterFunc(d time.Duration, f func()) circulation.Timer {
	return p.Wheel.AfterFunc(max(d, 1), func() { p.work <- f })
}

func (p *wheelPool) Close() {
	p.Stop()
	close(p.work)
	p.wg.Wait()
}

// goZero adapts go-zero's TimingWheel, which keys timers instead of
// returning them and runs all its work on its own goroutine: SetTimer and
// RemoveTimer are requests over an unbuffered channel, and the due tasks of
// a tick run one after another on one goroutine.
type goZero struct {
	tw   *collection.TimingWheel
	keys atomic.Int64
}

func newGoZero(tick time.Duration) scheduler {
	tw, err := collection.NewTimingWheel(tick, 512, func(_, f any) { f.(func())() })
	if err != nil {
		panic(err)
	}
	return &goZero{tw: tw}
}

func (g *goZero) AfterFunc(d time.Duration, f func()) circulation.Timer {
	key := g.keys.Add(1)
	if d <= 0 {
		go f()
		return goZeroTimer{}
	}
	if err := g.tw.SetTimer(key, f, d); err != nil {
		panic(err)
	}
	return goZeroTimer{g.tw, key}
}

func (g *goZero) Close() { g.tw.Stop() }

type goZeroTimer struct {
	tw  *collection.TimingWheel
	key int64
}

// Stop asks go-zero to remove the timer; go-zero cannot say whether it had
// fired.
func (t goZeroTimer) Stop() bool {
	if t.tw == nil {
		return false
	}
	return t.tw.RemoveTimer(t.key) == nil
}

// wheelGo starts a goroutine per callback, as time.AfterFunc does.
type wheelGo struct{ wheelScheduler }

func (w wheelGo) AfterFunc(d time.Duration, f func()) circulation.Timer {
	return w.wheelScheduler.AfterFunc(max(d, 1), func() { go f() })
}
