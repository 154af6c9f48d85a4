package schedule

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"time"
	"weak"
)

// missedEvery is the least time between two "slots missed" lines of one
// logger.
const missedEvery = time.Minute

// missedLog holds back the "slots missed" lines of one logger to one per
// missedEvery: the slots missed meanwhile are counted, and logged when the
// minute is over, by a timer, or by the next Missed slot after it. (A
// timer armed in a testing/synctest bubble that ends first never fires:
// the count it would have logged waits for the next Missed slot after the
// minute, by whichever clock reads it.)
type missedLog struct {
	mu       sync.Mutex
	logged   time.Time // the latest line
	unlogged int       // the slots Missed since it that no line counted
	first    Record    // the first of those
	node     string    // the node of the job of first
	flushAt  time.Time // when the timer armed last flushes the count held; zero if none is
}

// missedLogs holds a *missedLog per logger, made at its first Missed slot,
// keyed by a weak pointer to the logger (nil for slog.Default()), so that
// a logger dropped is collected, and its entry deleted then.
var missedLogs sync.Map // weak.Pointer[slog.Logger] -> *missedLog

// logMissed logs the Missed records among rs, the records of slots that
// did not run: a line with the first of them and the count of those
// missed since the previous line, unless that line is less than
// missedEvery old, in which case they are counted, and logged once the
// minute is over.
func (j *Job) logMissed(rs []Record) {
	n := 0
	first := -1
	for i := range rs {
		if rs[i].Status == Missed {
			if n == 0 {
				first = i
			}
			n++
		}
	}
	if n == 0 {
		return
	}
	l := j.cfg.log
	key := weak.Make(l)
	v, ok := missedLogs.Load(key)
	if !ok {
		var loaded bool
		if v, loaded = missedLogs.LoadOrStore(key, new(missedLog)); !loaded && l != nil {
			runtime.AddCleanup(l, func(k weak.Pointer[slog.Logger]) { missedLogs.Delete(k) }, key)
		}
	}
	m := v.(*missedLog)
	now := time.Now()
	m.mu.Lock()
	if m.unlogged == 0 {
		m.first, m.node = rs[first], j.cfg.nodeName()
	}
	m.unlogged += n
	// Held if the latest line is less than a minute old by this clock (a
	// line "later" than now was logged by another clock: a test's bubble,
	// or the wall clock set back).
	if since := now.Sub(m.logged); !m.logged.IsZero() && since >= 0 && since < missedEvery {
		// A timer flushes the count once the minute is over. One armed
		// for a time past, which did not flush, died with the bubble
		// that armed it: another is armed.
		if m.flushAt.IsZero() || now.After(m.flushAt) {
			m.flushAt = m.logged.Add(missedEvery)
			time.AfterFunc(m.flushAt.Sub(now), func() { m.flush(l) })
		}
		m.mu.Unlock()
		return
	}
	r, node, missed := m.takeLocked(now)
	m.mu.Unlock()
	logMissedLine(l, r, node, missed)
}

// flush logs the count held back, if any, once the minute after the
// latest line is over: the timer's call.
func (m *missedLog) flush(l *slog.Logger) {
	m.mu.Lock()
	m.flushAt = time.Time{}
	if m.unlogged == 0 {
		m.mu.Unlock()
		return
	}
	r, node, missed := m.takeLocked(time.Now())
	m.mu.Unlock()
	logMissedLine(l, r, node, missed)
}

// takeLocked returns the first slot held back, its node and the count,
// noting a line logged at now. The caller holds m.mu.
func (m *missedLog) takeLocked(now time.Time) (Record, string, int) {
	r, node, missed := m.first, m.node, m.unlogged
	m.logged, m.unlogged, m.first = now, 0, Record{}
	return r, node, missed
}

// logMissedLine logs a "slots missed" line to l, or slog.Default() if l
// is nil.
func logMissedLine(l *slog.Logger, r Record, node string, missed int) {
	if l == nil {
		l = slog.Default()
	}
	if ctx := context.Background(); l.Enabled(ctx, slog.LevelWarn) {
		l.LogAttrs(ctx, slog.LevelWarn, msgMissed, slog.String("job", r.Job), slog.Time("due", r.Due),
			slog.String("node", node), slog.Int("missed", missed))
	}
}
