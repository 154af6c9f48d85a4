package schedule

import (
	"context"
	"strconv"
	"time"
)

// MaxPauseOnFailures bounds WithPauseOnFailures' count.
const MaxPauseOnFailures = 100

// WithPauseOnFailures makes the job pause itself once n slots in a row
// have Failed, each after its last attempt (WithRetry), with a note
// (Because) that says so and names the last of them: Temporal's
// pause_on_failure, counted. The count is the store's: the records of the
// job's slots on every replica sharing it, newest first, where a Failed
// slot counts, a Succeeded or Canceled one ends the count, and a slot that
// did not run (Skipped, Missed), or whose run is in flight or was handed
// over (Running, Released), is passed over; it looks at the newest 4n+32
// records. A job without a Store counts its own slots. So a job that
// fails on one replica and then on another pauses as if they were one
// process; the pause itself is this Job's, and paused, if not nil, is
// called with the job and its note once the job has paused, from the
// run's goroutine with no lock held, so that the caller can make it the
// pause of every replica (as cron.Table does, writing it into the task's
// definition).
//
// Only the job's slots count, Scheduled, CatchUp and Recovered: a RunNow
// (Manual) and a Backfill are passed over. The count is made when a slot
// has Failed, unless the job is paused already, whose pause and note then
// stand. A Resume starts the count again: the slots that failed before it
// do not count, for this Job; a Job made anew, as in a restart, counts
// them if they are the newest records. A store that keeps fewer than n
// records a job (a MemoryStore made with fewer) never lets the count
// reach n. WithPauseOnFailures panics if n is negative or more than
// MaxPauseOnFailures; 0 means never.
func WithPauseOnFailures(n int, paused func(*Job, PauseNote)) Option {
	if n < 0 || n > MaxPauseOnFailures {
		panic("schedule: WithPauseOnFailures(" + strconv.Itoa(n) + "): want 0 to " + strconv.Itoa(MaxPauseOnFailures))
	}
	return optionFunc(func(c *config) { c.pauseOn, c.pausedBy = n, paused })
}

// counted follows the outcome of the slot of p, status with msg, when the
// job pauses on failures: if it Failed, it counts the slots in a row that
// failed, and pauses the job if they are the job's limit.
func (j *Job) counted(x *active, p *pending, status Status, msg string) {
	if r := p.run.Reason; r == Manual || r == Backfill {
		return
	}
	switch status {
	case Failed:
	case Succeeded, Canceled:
		if x.own != nil {
			j.mu.Lock()
			if x.r != nil {
				x.r.failed = 0
				x.tidyRareLocked()
			}
			j.mu.Unlock()
		}
		return
	default:
		return
	}
	n := j.cfg.pauseOn
	j.mu.Lock()
	since := time.Time{} // the latest Resume: slots before it do not count
	if x.r != nil {
		since = x.r.resumed
	}
	count := 0
	if x.own != nil {
		r := x.rareLocked()
		r.failed++
		count = r.failed
	}
	j.mu.Unlock()
	if x.own == nil {
		ctx, cancel := context.WithTimeout(context.Background(), countWait)
		h, err := x.store.History(ctx, j.name, 4*n+32)
		cancel()
		if err != nil {
			return // the next failure counts again
		}
		count = failedInARow(h, since)
	}
	if count < n {
		return
	}
	note := "paused after " + strconv.Itoa(count) + " failed slots in a row; the last, due " +
		p.run.Due.UTC().Format(time.RFC3339Nano) + " on " + j.cfg.nodeName() + ": " + clipNote(msg)
	if !j.pause(true, []PauseOption{Because(note)}) {
		return // paused or stopped meanwhile: that pause, and its note, stand
	}
	j.logPaused(p.run, count)
	if f := j.cfg.pausedBy; f != nil {
		if got, ok := j.PauseNote(); ok {
			f(j, got)
		}
	}
}

// countWait bounds the read of the records that count the failures.
const countWait = 10 * time.Second

// failedInARow counts the Failed slots of h, newest first, until one that
// ended otherwise, or one whose run started before since; runs of a
// RunNow or a Backfill are passed over.
func failedInARow(h []Record, since time.Time) int {
	n := 0
	for _, r := range h {
		if r.Reason == Manual || r.Reason == Backfill {
			continue
		}
		switch r.Status {
		case Failed:
			if !since.IsZero() && r.Start.Before(since) {
				return n
			}
			n++
		case Succeeded, Canceled:
			return n
		}
	}
	return n
}

// clipNote returns msg cut to 200 bytes, at a rune's start.
func clipNote(msg string) string {
	const most = 200
	if len(msg) <= most {
		return msg
	}
	i := most
	for i > 0 && msg[i]&0xC0 == 0x80 {
		i--
	}
	return msg[:i] + "..."
}
