package otelcirculation_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	otelcirculation "github.com/circulation-go/circulation/otel"
	"github.com/circulation-go/circulation/schedule"
)

// Two replicas of a job on one SharedStore: each slot is claimed by one,
// and lost by the other; the slot of 1m fails; the run of 3m is cut short
// by its node's Shutdown, and the other node takes it over. The metrics
// and spans say so, read back from a ManualReader and a SpanRecorder; the
// Func's own spans are children of its run's.
func TestJobMetricsAndSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSDK(t)
		t0 := time.Now()
		store := schedule.NewMemoryStore(100)
		var mu sync.Mutex
		ran := map[time.Duration]string{} // the node of each slot's first run
		work := func(node string) schedule.Func {
			return func(ctx context.Context, r schedule.Run) error {
				_, span := s.tp.Tracer("app").Start(ctx, "work")
				defer span.End()
				mu.Lock()
				if _, ok := ran[r.Due.Sub(t0)]; !ok {
					ran[r.Due.Sub(t0)] = node
				}
				mu.Unlock()
				switch d := r.Due.Sub(t0); {
				case d == time.Minute:
					time.Sleep(2 * time.Second)
					return errors.New("boom")
				case d == 3*time.Minute && r.Reason != schedule.Recovered:
					select {
					case <-time.After(time.Hour):
					case <-ctx.Done():
						return context.Cause(ctx)
					}
				}
				time.Sleep(time.Second)
				return nil
			}
		}
		jobs := map[string]*schedule.Job{}
		for _, node := range []string{"a", "b"} {
			jobs[node] = schedule.NewJob("j", schedule.Every(time.Minute), work(node),
				schedule.WithStore(store), schedule.WithNode(node), schedule.WithLogger(quiet), s.tel.JobOption())
			require.NoError(t, jobs[node].Start(context.Background()))
		}
		time.Sleep(3*time.Minute + 30*time.Second)
		mu.Lock()
		winner := ran[3*time.Minute]
		mu.Unlock()
		require.NotEmpty(t, winner)
		other := map[string]string{"a": "b", "b": "a"}[winner]
		assert.Equal(t, map[string]int64{"job=j": 1}, ints(t, s.collect(t)["circulation.run.active"]), "the run of 3m is in flight")
		// Shutdown waits 10s for the run of 3m, then cuts it short and
		// hands it over.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		require.ErrorIs(t, jobs[winner].Shutdown(ctx), context.DeadlineExceeded)
		cancel()
		time.Sleep(time.Minute) // 4m40s
		require.NoError(t, jobs[other].Stop(context.Background()))

		m := s.collect(t)
		assert.Equal(t, map[string]int64{
			"job=j,reason=Scheduled,status=Failed":    1, // 1m
			"job=j,reason=Scheduled,status=Succeeded": 2, // 2m, 4m
			"job=j,reason=Scheduled,status=Released":  1, // 3m, on the winner
			"job=j,reason=Recovered,status=Succeeded": 1, // 3m, taken over
		}, ints(t, m["circulation.runs"]))
		assert.Equal(t, map[string]uint64{
			"job=j,reason=Scheduled,status=Failed":    1,
			"job=j,reason=Scheduled,status=Succeeded": 2,
			"job=j,reason=Scheduled,status=Released":  1,
			"job=j,reason=Recovered,status=Succeeded": 1,
		}, counts(t, m["circulation.run.duration"]))
		assert.Equal(t, map[string]float64{
			"job=j,reason=Scheduled,status=Failed":    2,
			"job=j,reason=Scheduled,status=Succeeded": 2,
			"job=j,reason=Scheduled,status=Released":  40,
			"job=j,reason=Recovered,status=Succeeded": 1,
		}, sums(t, m["circulation.run.duration"]), "seconds from claim to end, on the bubble's clock")
		assert.Equal(t, map[string]uint64{"job=j,reason=Scheduled": 4}, counts(t, m["circulation.run.lateness"]))
		assert.Equal(t, map[string]float64{"job=j,reason=Scheduled": 0}, sums(t, m["circulation.run.lateness"]), "on time, on the bubble's clock")
		assert.Equal(t, map[string]int64{"job=j": 0}, ints(t, m["circulation.run.active"]))
		assert.Equal(t, map[string]int64{"job=j": 3}, ints(t, m["circulation.claim.lost"]), "1m, 2m and 3m, each lost by one of the two")
		assert.Equal(t, map[string]int64{"job=j": 1}, ints(t, m["circulation.claim.takeovers"]))

		var runs, works []sdktrace.ReadOnlySpan
		for _, sp := range s.spans.Ended() {
			switch sp.Name() {
			case otelcirculation.SpanName:
				runs = append(runs, sp)
			case "work":
				works = append(works, sp)
			}
		}
		require.Len(t, runs, 5)
		require.Len(t, works, 5)
		ids := map[trace.SpanID]sdktrace.ReadOnlySpan{}
		for _, sp := range runs {
			ids[sp.SpanContext().SpanID()] = sp
		}
		for _, w := range works {
			run, ok := ids[w.Parent().SpanID()]
			if assert.True(t, ok, "the Func's span is a child of its run's") {
				assert.Equal(t, run.SpanContext().TraceID(), w.SpanContext().TraceID())
			}
		}
		byDue := map[string][]sdktrace.ReadOnlySpan{}
		for _, sp := range runs {
			a := attrs(sp)
			byDue[a["due"]] = append(byDue[a["due"]], sp)
		}
		at := func(d time.Duration) string { return t0.Add(d).UTC().Format(time.RFC3339Nano) }
		failed := byDue[at(time.Minute)]
		require.Len(t, failed, 1)
		assert.Equal(t, sdktrace.Status{Code: codes.Error, Description: "boom"}, failed[0].Status())
		assert.Equal(t, map[string]string{"job": "j", "due": at(time.Minute), "attempt": "1", "reason": "Scheduled",
			"node": ran[time.Minute], "status": "Failed"}, attrs(failed[0]))
		assert.Equal(t, t0.Add(time.Minute), failed[0].StartTime(), "the span starts at the claim")
		assert.Equal(t, t0.Add(time.Minute+2*time.Second), failed[0].EndTime())
		three := byDue[at(3*time.Minute)]
		require.Len(t, three, 2)
		got := map[string]map[string]string{}
		for _, sp := range three {
			a := attrs(sp)
			got[a["node"]] = a
			assert.Equal(t, codes.Unset, sp.Status().Code)
		}
		assert.Equal(t, map[string]map[string]string{
			winner: {"job": "j", "due": at(3 * time.Minute), "attempt": "1", "reason": "Scheduled", "node": winner,
				"status": "Released", "err": "schedule: job shut down"},
			other: {"job": "j", "due": at(3 * time.Minute), "attempt": "2", "reason": "Recovered", "node": other,
				"status": "Succeeded"},
		}, got)
	})
}

// A store whose claims fail counts a failure for each, and the slots
// Skipped.
func TestStoreFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSDK(t)
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(context.Context, schedule.Run) error { return nil },
			schedule.WithStore(downStore{schedule.NewMemoryStore(10)}), schedule.WithClaimRetry(0),
			schedule.WithLogger(quiet), s.tel.JobOption())
		require.NoError(t, j.Start(context.Background()))
		time.Sleep(2*time.Minute + 30*time.Second)
		require.NoError(t, j.Stop(context.Background()))
		m := s.collect(t)
		assert.Equal(t, map[string]int64{"job=j": 2}, ints(t, m["circulation.store.failures"]))
		assert.Equal(t, map[string]int64{"job=j,reason=Scheduled,status=Skipped": 2}, ints(t, m["circulation.runs"]))
		assert.Empty(t, s.spans.Ended(), "no run, no span")
	})
}

// downStore is a Store whose claims fail.
type downStore struct{ schedule.Store }

func (downStore) Claim(context.Context, schedule.Record) error {
	return errors.New("connection refused")
}
