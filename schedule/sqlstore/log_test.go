package sqlstore_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// logRecorder is a slog.Handler that records the message and attributes
// of every line.
type logRecorder struct {
	mu    sync.Mutex
	lines []map[string]any // "msg" and the attributes
}

func (*logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l := map[string]any{"msg": r.Message, "level": r.Level}
	r.Attrs(func(a slog.Attr) bool {
		l[a.Key] = a.Value.Resolve().Any()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines = append(h.lines, l)
	return nil
}

func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

func (h *logRecorder) got() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]any(nil), h.lines...)
}

// A claim that waits for another writer for more than a quarter of the
// lease is logged as a slow statement; a second one within a minute is
// counted, not logged. (SQLite, whose writers lock the whole database.)
func TestLogSlowStatement(t *testing.T) {
	b := backends()[0]
	dsn := b.dsn(t)
	var h logRecorder
	const lease = 400 * time.Millisecond
	s := newStore(t, b, dsn, sqlstore.WithLease(lease), sqlstore.WithNode("a"), sqlstore.WithLogger(slog.New(&h)))
	db := openDB(t, b.driver, dsn)
	for i := range 2 {
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		require.NoError(t, err)
		time.AfterFunc(lease/2, func() {
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
			conn.Close()
		})
		require.NoError(t, s.Claim(ctx, running("j", i, "a")))
	}
	lines := h.got()
	require.Len(t, lines, 1)
	assert.Equal(t, "sqlstore: slow statement", lines[0]["msg"])
	assert.Equal(t, slog.LevelWarn, lines[0]["level"])
	assert.Equal(t, "claim", lines[0]["op"])
	assert.Equal(t, int64(1), lines[0]["calls"])
	assert.Equal(t, "a", lines[0]["node"])
	assert.Equal(t, int64(0), lines[0]["unlogged"])
	assert.GreaterOrEqual(t, lines[0]["took"], lease/4)
}

// A job that takes over the claim of a node that died logs it, once,
// with the run and its own node.
func TestLogTakeover(t *testing.T) {
	b := backends()[0]
	dsn := b.dsn(t)
	const lease = 300 * time.Millisecond
	dead := newStore(t, b, dsn, sqlstore.WithLease(lease))
	due := time.Now().Truncate(time.Hour)
	require.NoError(t, dead.Claim(ctx, schedule.Record{Job: "j", Due: due, Status: schedule.Running, Node: "dead", Attempt: 1}))

	var h logRecorder
	s := newStore(t, b, dsn, sqlstore.WithLease(lease))
	ran := make(chan schedule.Run, 1)
	j := schedule.NewJob("j", schedule.Every(time.Hour), func(_ context.Context, r schedule.Run) error {
		if r.Reason == schedule.Recovered {
			ran <- r
		}
		return nil
	}, schedule.WithStore(s), schedule.WithNode("b"), schedule.WithMisfire(schedule.MisfireSkip),
		schedule.WithLogger(slog.New(&h)))
	require.NoError(t, j.Start(ctx))
	defer func() { require.NoError(t, j.Stop(ctx)) }()
	select {
	case r := <-ran:
		assert.True(t, r.Due.Equal(due))
	case <-time.After(10 * time.Second):
		t.Fatal("the claim was not taken over")
	}
	eventually(t, "the takeover logged", func() bool { return len(h.got()) > 0 })
	lines := h.got()
	require.Len(t, lines, 1)
	assert.Equal(t, "schedule: claim taken over", lines[0]["msg"])
	assert.Equal(t, slog.LevelWarn, lines[0]["level"])
	assert.Equal(t, "j", lines[0]["job"])
	assert.True(t, due.Equal(lines[0]["due"].(time.Time)))
	assert.Equal(t, "b", lines[0]["node"])
	assert.Equal(t, int64(2), lines[0]["attempt"])
}
