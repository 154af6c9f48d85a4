package sqlstore_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// statements records what a statement hook is told.
type statements struct {
	mu  sync.Mutex
	got []sqlstore.Statement
}

func (s *statements) hook(st sqlstore.Statement) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, st)
}

// take returns what the hook was told since the last take, as "op calls
// err", and checks that each took some time.
func (s *statements) take(t *testing.T) []string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, st := range s.got {
		assert.Positive(t, st.Took, "%s took no time", st.Op)
		line := st.Op + " " + strconv.Itoa(st.Calls)
		if st.Err != nil {
			line += " err"
		}
		out = append(out, line)
	}
	s.got = nil
	return out
}

// The statement hook hears of each exchange with the database, by
// operation, with the calls it carried; the answers the Store turns into
// errors (no record, claimed, lease lost, a task defined already) are not
// errors to it, and a database that fails is.
func TestStatementHook(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		var st statements
		dsn := b.dsn(t)
		db := openDB(t, b.driver, dsn)
		s, err := sqlstore.New(ctx, db, b.dialect, sqlstore.WithTable(tableFor(t)), sqlstore.WithStatementHook(st.hook))
		require.NoError(t, err)
		assert.Empty(t, st.take(t), "New's migration is not reported")

		_, err = s.Last(ctx, "j")
		require.ErrorIs(t, err, schedule.ErrNoRecord)
		require.NoError(t, s.Claim(ctx, running("j", 1, "a")))
		require.ErrorIs(t, s.Claim(ctx, running("j", 1, "b")), schedule.ErrClaimed)
		fin := running("j", 1, "a")
		fin.Status, fin.End = schedule.Succeeded, slot(1).Add(time.Millisecond)
		require.NoError(t, s.Finish(ctx, fin))
		fin.Status = schedule.Released
		require.ErrorIs(t, s.Release(ctx, fin), schedule.ErrLeaseLost)
		_, err = s.Reclaim(ctx, "j", "b", schedule.Concurrency{})
		require.ErrorIs(t, err, schedule.ErrNoRecord)
		_, err = s.History(ctx, "j", 10)
		require.NoError(t, err)
		assert.Equal(t, []string{"last 1", "claim 1", "claim 1", "finish 1", "release 1", "reclaim 1", "history 1"}, st.take(t))

		assert.Equal(t, []string{"won", "won", "won"},
			sqlstore.ClaimBatch(s, []schedule.Record{running("k", 1, "a"), running("k", 2, "a"), running("k", 3, "a")}, 0))
		assert.Equal(t, []string{"claim 3"}, st.take(t), "a batch is one statement")

		defs := s.Definitions()
		task := cron.Task{Name: "t", Handler: "h", Spec: "* * * * *", Permanent: true}
		_, err = defs.Create(ctx, task)
		require.NoError(t, err)
		_, err = defs.Create(ctx, task)
		require.ErrorIs(t, err, sqlstore.ErrTaskExists)
		_, _, err = defs.Get(ctx, "t")
		require.NoError(t, err)
		assert.Equal(t, []string{"definitions.write 1", "definitions.write 1", "definitions.read 1"}, st.take(t))

		require.NoError(t, db.Close())
		_, err = s.Last(ctx, "j")
		require.Error(t, err)
		assert.Equal(t, []string{"last 1 err"}, st.take(t), "a database that fails")
	})
}
