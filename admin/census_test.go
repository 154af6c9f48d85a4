package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/admin"
)

// A client that goes away while its request reads the census does not
// cut the read short: the next request is served the counts, not a census
// of a cancelled read.
func TestCensusOfAClientGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := overviewFixture(t, func(o *admin.Options) {
			o.Nodes = func(ctx context.Context) ([]admin.Node, error) {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				return []admin.Node{{Name: "n", Live: true}}, nil
			}
		})
		defer f.stop()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := httptest.NewRequestWithContext(ctx, http.MethodGet, "http://admin.test/jobs/api/overview", nil)
		f.h.ServeHTTP(httptest.NewRecorder(), r)

		var o jsonOverview
		f.getJSON("/jobs/api/overview", 200, &o) // another user, a moment later
		assert.Empty(t, o.NodesError)
		assert.Empty(t, o.Warning)
		assert.Len(t, o.Nodes, 1)
		n, _ := o.count("failing")
		assert.Equal(t, 1, n)
	})
}

// A census older than OverviewAge is read again in the background: the
// request that finds it old, and every request during the reading, are
// served the one before at once, and the reading is one. The request
// after a write through the page is not served stale: it waits for a
// census read since.
func TestCensusReadAgainInTheBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := overviewFixture(t, func(o *admin.Options) { o.OverviewAge = 5 * time.Second })
		defer f.stop()
		never := func(body string) int {
			var o jsonOverview
			require.NoError(t, json.Unmarshal([]byte(body), &o))
			n, _ := o.count("never")
			return n
		}
		require.Equal(t, 3, never(f.get("/jobs/api/overview").body))
		require.NoError(t, f.table.RunNow("e-never"))
		time.Sleep(6 * time.Second) // the census is old, and e-never ran
		synctest.Wait()

		var reads atomic.Int64
		release := make(chan struct{})
		admin.SetCensusHook(func() {
			reads.Add(1)
			<-release
		})
		defer admin.SetCensusHook(nil)
		served := make(chan int, 10)
		for range 10 {
			go func() { served <- never(f.get("/jobs/api/overview").body) }()
		}
		synctest.Wait() // the reading blocks; no request waits for it
		require.Len(t, served, 10, "requests served during the reading")
		for range 10 {
			assert.Equal(t, 3, <-served, "the census before")
		}
		assert.EqualValues(t, 1, reads.Load(), "readings")
		close(release)
		synctest.Wait()
		assert.Equal(t, 2, never(f.get("/jobs/api/overview").body), "the census read in the background")
		assert.EqualValues(t, 1, reads.Load(), "readings")

		require.Equal(t, 303, f.post("/jobs/pause", form("kind", "task", "name", "e-never")).status)
		release = make(chan struct{})
		paused := make(chan int, 1)
		go func() {
			var o jsonOverview
			require.NoError(t, json.Unmarshal([]byte(f.get("/jobs/api/overview").body), &o))
			n, _ := o.count("paused")
			paused <- n
		}()
		synctest.Wait()
		assert.Empty(t, paused, "a request after a write waits for the census")
		close(release)
		assert.Equal(t, 2, <-paused, "d-paused and e-never")
		assert.EqualValues(t, 2, reads.Load(), "readings")
	})
}

// A census is served while the next is read for up to twice OverviewAge:
// the first request after a quiet hour waits for a census read since.
func TestCensusServedOldForTwiceItsAgeAtMost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := overviewFixture(t, func(o *admin.Options) { o.OverviewAge = 5 * time.Second })
		defer f.stop()
		var o jsonOverview
		f.getJSON("/jobs/api/overview", 200, &o)
		n, _ := o.count("never")
		require.Equal(t, 3, n)
		require.NoError(t, f.table.RunNow("e-never"))
		time.Sleep(time.Hour) // nobody looks
		synctest.Wait()
		f.getJSON("/jobs/api/overview", 200, &o)
		n, _ = o.count("never")
		assert.Equal(t, 2, n, "the census read for the first request after an hour")
		assert.Less(t, time.Since(o.AsOf), time.Second)
	})
}

// A bulk action on a filter by state acts on a census no older than
// OverviewAge, not on one served while the next is read.
func TestBulkActsOnACurrentCensus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := overviewFixture(t, func(o *admin.Options) { o.OverviewAge = 5 * time.Second })
		defer f.stop()
		f.get("/jobs/api/overview")
		require.NoError(t, f.table.RunNow("e-never"))
		time.Sleep(6 * time.Second) // the census is old, not too old to serve
		synctest.Wait()
		res := f.post("/jobs/api/bulk", url.Values{"do": {"pause"}, "all": {"1"}, "state": {"never"}, "confirm": {"1"}})
		require.Equal(t, 200, res.status, res.body)
		def, _, err := f.defs.Get(context.Background(), "e-never")
		require.NoError(t, err)
		assert.False(t, def.Paused, "e-never has run: it is not in state=never")
		def, _, err = f.defs.Get(context.Background(), "d-paused")
		require.NoError(t, err)
		assert.True(t, def.Paused)
	})
}

// A census whose reading panics in the background (here Options.Nodes)
// does not take the process down: the page says so, and the next reading
// is made as usual. One that panics for a request panics that request
// alone, and leaves the cache to the next.
func TestCensusReadingThatPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		f := overviewFixture(t, func(o *admin.Options) {
			o.OverviewAge = 5 * time.Second
			o.Nodes = func(context.Context) ([]admin.Node, error) {
				if n := calls.Add(1); n == 2 || n == 4 {
					panic("nodes: nil client")
				}
				return nil, nil
			}
		})
		defer f.stop()
		var o jsonOverview
		f.getJSON("/jobs/api/overview", 200, &o)
		require.Empty(t, o.Warning)
		time.Sleep(6 * time.Second)
		f.getJSON("/jobs/api/overview", 200, &o) // served the census before; reads in the background
		assert.Empty(t, o.Warning)
		synctest.Wait()
		f.getJSON("/jobs/api/overview", 200, &o)
		assert.Contains(t, o.Warning, "admin: reading the page's state panicked: nodes: nil client")
		time.Sleep(6 * time.Second)
		f.getJSON("/jobs/api/overview", 200, &o)
		synctest.Wait()
		f.getJSON("/jobs/api/overview", 200, &o)
		assert.Empty(t, o.Warning, "read again")
		n, _ := o.count("failing")
		assert.Equal(t, 1, n)

		// For a request: a write makes it read, and the Nodes panics.
		require.Equal(t, 303, f.post("/jobs/resume", form("kind", "task", "name", "d-paused")).status)
		assert.Panics(t, func() { f.get("/jobs/api/overview") })
		f.getJSON("/jobs/api/overview", 200, &o)
		assert.Empty(t, o.Warning)
		n, _ = o.count("paused")
		assert.Equal(t, 0, n)
	})
}
