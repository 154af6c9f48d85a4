package schedule_test

import (
	"context"
	"log/slog"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/schedule"
)

// A blip of the store, logged, then an outage of an hour that starts 20s
// after the blip's line: too soon to log its start at once, it is logged
// once the quiet minute has passed, and so is its end.
func TestLogLongOutageAfterABlip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h logRecorder
		store := &scriptedStore{MemoryStore: schedule.NewMemoryStore(10)}
		j := schedule.NewJob("j", schedule.Every(10*time.Second), func(context.Context, schedule.Run) error { return nil },
			schedule.WithStore(store), schedule.WithClaimRetry(0), schedule.WithNode("n"), schedule.WithLogger(slog.New(&h)))
		start(t, j)
		time.Sleep(15 * time.Second)
		store.set(func(s *scriptedStore) { s.claimsDown = true }) // 20s fails
		time.Sleep(10 * time.Second)
		store.set(func(s *scriptedStore) { s.claimsDown = false }) // 30s answers
		time.Sleep(10 * time.Second)
		store.set(func(s *scriptedStore) { s.claimsDown = true }) // 40s on: down for an hour
		time.Sleep(time.Hour)
		lines := h.got()
		for _, l := range lines {
			t.Log(l.Msg, l.Attrs)
		}
		assert.Equal(t, "schedule: store unreachable", lines[len(lines)-1].Msg, "an hour-long outage, and the last line says the store is reachable")
		store.set(func(s *scriptedStore) { s.claimsDown = false })
		time.Sleep(20 * time.Second)
		stop(t, j)
		lines = h.got()
		assert.Equal(t, "schedule: store reachable again", lines[len(lines)-1].Msg, "the end of the hour-long outage")
	})
}

// A store that failed once, then dropped, is collected: what the logs
// keep of its outages does not hold it.
func TestLogOutagesKeepNoStoreAlive(t *testing.T) {
	collected := make(chan struct{}, 1)
	synctest.Test(t, func(t *testing.T) {
		store := &scriptedStore{MemoryStore: schedule.NewMemoryStore(10)}
		runtime.SetFinalizer(store, func(*scriptedStore) { collected <- struct{}{} })
		store.set(func(s *scriptedStore) { s.claimsDown = true })
		j := schedule.NewJob("j", schedule.Every(10*time.Second), func(context.Context, schedule.Run) error { return nil },
			schedule.WithStore(store), schedule.WithClaimRetry(0), schedule.WithLogger(slog.New(&logRecorder{})))
		start(t, j)
		time.Sleep(15 * time.Second)
		store.set(func(s *scriptedStore) { s.claimsDown = false })
		time.Sleep(10 * time.Second) // answered: the outage has ended
		stop(t, j)
	})
	for range 5 {
		runtime.GC()
		select {
		case <-collected:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatal("the store, its job stopped and every reference dropped, is never collected")
}
