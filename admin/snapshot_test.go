package admin_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/admin"
	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// A countingStore is a MemoryStore that reads the last records of many
// jobs in one call, and counts its reads of last records.
type countingStore struct {
	*schedule.MemoryStore
	mu     sync.Mutex
	last   int   // calls of Last
	lastOf []int // the number of names of each call of LastOf
}

func (s *countingStore) Last(ctx context.Context, job string) (schedule.Record, error) {
	s.mu.Lock()
	s.last++
	s.mu.Unlock()
	return s.MemoryStore.Last(ctx, job)
}

func (s *countingStore) LastOf(ctx context.Context, jobs []string) (map[string]schedule.Record, error) {
	s.mu.Lock()
	s.lastOf = append(s.lastOf, len(jobs))
	s.mu.Unlock()
	m := map[string]schedule.Record{}
	for _, j := range jobs {
		if r, err := s.MemoryStore.Last(ctx, j); err == nil {
			m[j] = r
		}
	}
	return m, nil
}

// reads returns the calls of Last, and the sizes of the calls of LastOf,
// since the last call of reads.
func (s *countingStore) reads() (int, []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last, lastOf := s.last, s.lastOf
	s.last, s.lastOf = 0, nil
	return last, lastOf
}

// A page of the list reads the state of its own rows only, in one call of
// the Store for the Table's tasks and one for the Jobs, whatever the
// number of tasks; so does a task's page. The last outcome it shows is
// the Store's as the page is served, not the snapshot's: the snapshot
// holds names only.
func TestListReadsItsRows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := &countingStore{MemoryStore: schedule.NewMemoryStore(10)}
		tab := cron.NewTable(handlers, cron.WithLocation(time.UTC), cron.WithStore(store))
		var defs []cron.Task
		for i := range 120 {
			defs = append(defs, task(fmt.Sprintf("t%03d", i)))
		}
		_, err := tab.Apply(ctx, defs)
		require.NoError(t, err)
		job := schedule.NewJob("x-report", schedule.Every(time.Hour), func(context.Context, schedule.Run) error { return nil },
			schedule.WithStore(store))
		require.NoError(t, job.Start(ctx))
		mux := http.NewServeMux()
		mux.Handle("/jobs/", http.StripPrefix("/jobs", admin.New(admin.Options{Table: tab, Jobs: []*schedule.Job{job},
			Store: store, Authorize: allow, Location: time.UTC, PageSize: 50, SnapshotAge: time.Minute})))
		f := &fixture{t: t, h: mux}
		store.reads()

		var l jsonList
		f.getJSON("/jobs/api/tasks", 200, &l)
		require.Len(t, l.Items, 50)
		last, lastOf := store.reads()
		assert.Equal(t, 0, last, "calls of Last")
		assert.Equal(t, []int{50}, lastOf, "the names of each LastOf")

		f.getJSON("/jobs/api/tasks?page=3", 200, &l)
		require.Len(t, l.Items, 21)
		assert.Equal(t, "x-report", l.Items[20].Name)
		last, lastOf = store.reads()
		assert.Equal(t, 0, last, "calls of Last")
		assert.Equal(t, []int{20, 1}, lastOf, "the names of each LastOf: the tasks', the Jobs'")

		var d jsonDetail
		f.getJSON("/jobs/api/task?name=t007", 200, &d)
		assert.True(t, d.Loaded)
		assert.Nil(t, d.Last)
		last, lastOf = store.reads()
		assert.Equal(t, 0, last, "calls of Last")
		assert.Equal(t, []int{1}, lastOf, "the names of each LastOf")

		// A run that ends after the snapshot was read shows at once.
		require.NoError(t, tab.RunNow("t007"))
		synctest.Wait()
		f.getJSON("/jobs/api/tasks", 200, &l)
		require.Equal(t, "t007", l.Items[7].Name)
		require.NotNil(t, l.Items[7].Last)
		assert.Equal(t, "Succeeded", l.Items[7].Last.Status)
		// So does a task removed: it leaves the page, which the snapshot
		// still counts.
		_, err = tab.Apply(ctx, slices.Delete(slices.Clone(defs), 7, 8))
		require.NoError(t, err)
		f.getJSON("/jobs/api/tasks", 200, &l)
		assert.Equal(t, 121, l.Total)
		assert.Len(t, l.Items, 49)
		assert.Equal(t, "t008", l.Items[7].Name)

		require.NoError(t, job.Stop(ctx))
		require.NoError(t, tab.Stop(ctx))
	})
}

// However many requests come at once, the snapshot is read once: the
// requests that come while it is read wait for that reading. A write
// through the page makes the requests after it read the names again, once.
func TestSnapshotReadOnceForConcurrentRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var defs []cron.Task
		for i := range 20 {
			defs = append(defs, task(fmt.Sprintf("t%03d", i)))
		}
		f := newFixture(t, func(o *admin.Options) { o.SnapshotAge = time.Minute }, defs...)
		defer f.stop()
		synctest.Wait() // the Table has loaded the definitions

		var reads atomic.Int64
		release := make(chan struct{})
		admin.SetReadHook(func() {
			reads.Add(1)
			<-release
		})
		defer admin.SetReadHook(nil)
		burst := func() []int {
			codes := make([]int, 50)
			var wg sync.WaitGroup
			for i := range codes {
				wg.Go(func() {
					target := "/jobs/api/tasks"
					if i%2 == 1 {
						target = "/jobs/?q=t01"
					}
					codes[i] = f.get(target).status
				})
			}
			synctest.Wait() // one reads, the others wait for it
			close(release)
			wg.Wait()
			release = make(chan struct{})
			return codes
		}
		for _, c := range burst() {
			require.Equal(t, 200, c)
		}
		assert.EqualValues(t, 1, reads.Load(), "readings for 50 requests at once")

		close(release) // the POST's redirect reads nothing; a later page does
		require.Equal(t, 200, f.post("/jobs/api/pause", form("kind", "task", "name", "t003")).status)
		release = make(chan struct{})
		for _, c := range burst() {
			require.Equal(t, 200, c)
		}
		assert.EqualValues(t, 2, reads.Load(), "readings after a write, for 50 requests at once")
	})
}

// Requests of every kind, reads and writes, come at once while the
// definitions change and the tasks run, on the real clock and under the
// race detector: every answer is one the routes document, and every page
// of the list is sorted and no longer than a page.
func TestConcurrentRequests(t *testing.T) {
	var defs []cron.Task
	for i := range 60 {
		d := task(fmt.Sprintf("t%03d", i))
		d.Spec = "* * * * * *"
		if i%3 == 0 {
			d.Handler = "slow"
		}
		defs = append(defs, d)
	}
	f := newFixture(t, func(o *admin.Options) { o.SnapshotAge = 20 * time.Millisecond; o.PageSize = 25 }, defs...)
	defer f.stop()

	deadline := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	var bad sync.Map // unexpected answers, by route
	note := func(route string, status int) { bad.Store(fmt.Sprintf("%s: %d", route, status), true) }
	for g := range 4 {
		wg.Go(func() { // readers
			for i := 0; time.Now().Before(deadline); i++ {
				var l jsonList
				res := f.get(fmt.Sprintf("/jobs/api/tasks?page=%d", 1+i%3))
				if res.status != 200 {
					note("api/tasks", res.status)
					continue
				}
				f.getJSON(fmt.Sprintf("/jobs/api/tasks?q=t0%d&page=1", i%6), 200, &l)
				names := make([]string, len(l.Items))
				for k, it := range l.Items {
					names[k] = it.Name
				}
				if !slices.IsSorted(names) || len(names) > 25 {
					note("api/tasks sorted", len(names))
				}
				for _, target := range []string{"/jobs/", "/jobs/?q=T01", fmt.Sprintf("/jobs/task?name=t%03d", (g*7+i)%60),
					"/jobs/job?name=report", "/jobs/api/job?name=report"} {
					if res := f.get(target); res.status != 200 && res.status != 404 {
						note(target, res.status)
					}
				}
			}
		})
	}
	wg.Go(func() { // a writer through the page
		for i := 0; time.Now().Before(deadline); i++ {
			name := fmt.Sprintf("t%03d", i%60)
			for _, action := range []string{"pause", "run", "resume", "run"} {
				res := f.post("/jobs/api/"+action, form("kind", "task", "name", name))
				// 404: deleted meanwhile; 409: run while paused.
				if res.status != 200 && res.status != 404 && res.status != 409 {
					note(action, res.status)
				}
			}
		}
	})
	wg.Go(func() { // definitions changed elsewhere
		ctx := context.Background()
		for i := 0; time.Now().Before(deadline); i++ {
			name := fmt.Sprintf("u%03d", i%20)
			if _, err := f.defs.Create(ctx, task(name)); err != nil {
				if _, v, err := f.defs.Get(ctx, name); err == nil {
					_ = f.defs.Delete(ctx, name, v)
				}
			}
			time.Sleep(time.Millisecond)
		}
	})
	wg.Wait()
	bad.Range(func(k, _ any) bool {
		t.Errorf("unexpected answer %s", k)
		return true
	})
}
