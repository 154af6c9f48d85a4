package schedule

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// missedEvery is the least time between two "slots missed" lines of one
// logger.
const missedEvery = time.Minute

// missedLog holds back the "slots missed" lines of one logger to one per
// missedEvery.
type missedLog struct {
	mu       sync.Mutex
	logged   time.Time // the latest line
	unlogged int       // the slots Missed since it that no line counted
}

// missedLogs holds a *missedLog per logger (nil for slog.Default()),
// made at its first Missed slot.
var missedLogs sync.Map

// logMissed logs the Missed records among rs, the records of slots that
// did not run: a line with the first of them and the count of those
// missed since the previous line, unless that line is less than
// missedEvery old, in which case they are counted for the next.
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
	v, ok := missedLogs.Load(j.cfg.log)
	if !ok {
		v, _ = missedLogs.LoadOrStore(j.cfg.log, new(missedLog))
	}
	m := v.(*missedLog)
	now := time.Now()
	m.mu.Lock()
	m.unlogged += n
	if !m.logged.IsZero() && now.Sub(m.logged) < missedEvery {
		m.mu.Unlock()
		return
	}
	m.logged = now
	missed := m.unlogged
	m.unlogged = 0
	m.mu.Unlock()
	l := j.cfg.logger()
	if ctx := context.Background(); l.Enabled(ctx, slog.LevelWarn) {
		r := rs[first]
		l.LogAttrs(ctx, slog.LevelWarn, msgMissed, slog.String("job", r.Job), slog.Time("due", r.Due),
			slog.String("node", j.cfg.nodeName()), slog.Int("missed", missed))
	}
}
