package main

import (
	"sync"
	"time"

	"github.com/circulation-go/circulation"
)

// rounds is a model of the single-level wheel with rounds that Netty's
// HashedWheelTimer, Dubbo and go-zero use, written here only to measure
// what rounds cost against levels (the hold workload): 512 slots of one
// tick, a doubly linked list per slot, and a goroutine that visits one
// slot every tick, firing the timers whose rounds are spent and counting
// down the others. It ticks whether or not anything is due.
type rounds struct {
	mu    sync.Mutex
	slots [512]*roundsTimer
	pos   int
	tick  time.Duration
	stop  chan struct{}
	done  chan struct{}
}

type roundsTimer struct {
	w          *rounds
	f          func()
	rounds     int
	slot       int
	prev, next *roundsTimer
}

func newRounds(tick time.Duration) scheduler {
	w := &rounds{tick: tick, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *rounds) AfterFunc(d time.Duration, f func()) circulation.Timer {
	ticks := max(1, int((d+w.tick-1)/w.tick))
	w.mu.Lock()
	defer w.mu.Unlock()
	t := &roundsTimer{w: w, f: f, rounds: (ticks - 1) / len(w.slots), slot: (w.pos + ticks) % len(w.slots)}
	t.next = w.slots[t.slot]
	if t.next != nil {
		t.next.prev = t
	}
	w.slots[t.slot] = t
	return t
}

func (t *roundsTimer) Stop() bool {
	w := t.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if t.f == nil {
		return false
	}
	w.unlink(t)
	return true
}

func (w *rounds) unlink(t *roundsTimer) {
	if t.prev != nil {
		t.prev.next = t.next
	} else {
		w.slots[t.slot] = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	}
	t.prev, t.next, t.f = nil, nil, nil
}

func (w *rounds) run() {
	defer close(w.done)
	tk := time.NewTicker(w.tick)
	defer tk.Stop()
	var due []func()
	for {
		select {
		case <-tk.C:
		case <-w.stop:
			return
		}
		w.mu.Lock()
		w.pos = (w.pos + 1) % len(w.slots)
		for t := w.slots[w.pos]; t != nil; {
			next := t.next
			if t.rounds > 0 {
				t.rounds--
			} else {
				due = append(due, t.f)
				w.unlink(t)
			}
			t = next
		}
		w.mu.Unlock()
		for i, f := range due {
			go f()
			due[i] = nil
		}
		due = due[:0]
	}
}

func (w *rounds) Close() {
	close(w.stop)
	<-w.done
}
