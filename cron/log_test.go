package cron_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// logLine is a line a logRecorder recorded: its level, message and
// attributes, each as its Value's Any.
type logLine struct {
	Level slog.Level
	Msg   string
	Attrs map[string]any
}

// logRecorder is a slog.Handler that records every line, at every level.
type logRecorder struct {
	mu    sync.Mutex
	lines []logLine
}

func (*logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l := logLine{Level: r.Level, Msg: r.Message, Attrs: map[string]any{}}
	r.Attrs(func(a slog.Attr) bool {
		l.Attrs[a.Key] = a.Value.Resolve().Any()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines = append(h.lines, l)
	return nil
}

func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

func (h *logRecorder) got() []logLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]logLine(nil), h.lines...)
}

// A definition the Table refuses is logged once, naming the task and the
// field, however many Applies refuse it again for the same reason. A
// Source that cannot be read logs two lines, as its failures start and
// end, not one per look.
func TestLogRefusedAndSourceDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h logRecorder
		defs := newMemDefs(task("a", "h", "* * * * * *"), task("bad", "h", "0 0 30 2 *"))
		tab := cron.NewTable(map[string]cron.Handler{"h": func(context.Context, string, schedule.Run) error { return nil }},
			cron.WithLogger(slog.New(&h)))
		require.NoError(t, tab.Follow(context.Background(), defs.source()))
		defs.put(task("b", "h", "* * * * * *"))
		time.Sleep(1500 * time.Millisecond) // applied again: "bad" still refused
		_, err := tab.Apply(context.Background(), []cron.Task{task("c", "nope", "* * * * * *")})
		require.Error(t, err)
		defs.setFail(errors.New("connection refused"))
		time.Sleep(5 * time.Second)
		defs.setFail(nil)
		time.Sleep(time.Second)
		require.NoError(t, tab.Stop(context.Background()))

		lines := h.got()
		require.Len(t, lines, 4)
		assert.Equal(t, logLine{Level: slog.LevelError, Msg: "cron: definition refused", Attrs: map[string]any{
			"task": "bad", "field": "spec", "err": lines[0].Attrs["err"]}}, lines[0])
		assert.Contains(t, lines[0].Attrs["err"], `cron: task "bad": spec: `)
		assert.Equal(t, logLine{Level: slog.LevelError, Msg: "cron: definition refused", Attrs: map[string]any{
			"task": "c", "field": "handler", "err": `cron: task "c": handler: no handler "nope"`}}, lines[1])
		assert.Equal(t, logLine{Level: slog.LevelWarn, Msg: "cron: source unreachable", Attrs: map[string]any{
			"err": "connection refused"}}, lines[2])
		assert.Equal(t, logLine{Level: slog.LevelWarn, Msg: "cron: source reachable again", Attrs: map[string]any{
			"failed": int64(5), "took": 5 * time.Second}}, lines[3])
	})
}

// A Source that fails for a moment, then, 20s after, for an hour: the
// hour's outage, too soon to log at its start, is logged once the quiet
// minute has passed, and so is its end.
func TestLogLongSourceOutageAfterABlip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h logRecorder
		defs := newMemDefs(task("a", "h", "* * * * * *"))
		tab := cron.NewTable(map[string]cron.Handler{"h": func(context.Context, string, schedule.Run) error { return nil }},
			cron.WithLogger(slog.New(&h)))
		require.NoError(t, tab.Follow(context.Background(), defs.source()))
		defs.setFail(errors.New("connection refused"))
		time.Sleep(1500 * time.Millisecond)
		defs.setFail(nil)
		time.Sleep(20 * time.Second)
		defs.setFail(errors.New("connection refused"))
		time.Sleep(time.Hour)
		defs.setFail(nil)
		time.Sleep(2 * time.Second)
		require.NoError(t, tab.Stop(context.Background()))
		var msgs []string
		for _, l := range h.got() {
			msgs = append(msgs, l.Msg)
		}
		assert.Equal(t, []string{"cron: source unreachable", "cron: source reachable again",
			"cron: source unreachable", "cron: source reachable again"}, msgs)
	})
}
