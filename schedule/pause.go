package schedule

import "time"

// A PauseNote says why a job is paused and until when, as Pause was told
// (Temporal's schedule notes, Kubernetes' suspend).
type PauseNote struct {
	// Note is free text: who paused the job, and why.
	Note string
	// Since is when Pause was called.
	Since time.Time
	// Until is when the job resumes by itself; zero if only Resume ends
	// the pause.
	Until time.Time
}

// A PauseOption adds to a Pause: its note, or the time it ends.
type PauseOption interface {
	applyPause(*PauseNote)
}

type pauseOption func(*PauseNote)

func (f pauseOption) applyPause(n *PauseNote) { f(n) }

// Because gives a Pause its note: who paused the job, and why.
func Because(note string) PauseOption {
	return pauseOption(func(n *PauseNote) { n.Note = note })
}

// ResumeAt makes a Pause end by itself at t, as Resume ends it; t not
// after the Pause ends it at once. The zero t means no such end.
func ResumeAt(t time.Time) PauseOption {
	return pauseOption(func(n *PauseNote) { n.Until = t })
}

// With returns n with opts applied: what each gives replaces what n had.
func (n PauseNote) With(opts ...PauseOption) PauseNote {
	for _, o := range opts {
		if o != nil {
			o.applyPause(&n)
		}
	}
	return n
}

// A pausing is the note of a job's pause, and the timer of its end.
type pausing struct {
	note  PauseNote
	timer *time.Timer // ends the pause at note.Until; nil without one
}

// notePauseLocked keeps the note of the pause that starts, or goes on, at
// now, with opts, and arms its end. A paused job's note keeps what opts do
// not change. It reports whether the pause is over already: its end is
// not after now. The caller holds j.mu.
func (j *Job) notePauseLocked(now time.Time, opts []PauseOption) (over bool) {
	var old *pausing
	if j.paused() && j.x != nil && j.x.r != nil {
		old = j.x.r.pause
	}
	n := PauseNote{Since: now}
	if old != nil {
		n = old.note
	}
	n = n.With(opts...)
	if !n.Until.IsZero() && !n.Until.After(now) {
		return true
	}
	if old != nil && n == old.note {
		return false
	}
	if old != nil && old.timer != nil {
		old.timer.Stop()
	}
	p := &pausing{note: n}
	j.rareLocked(now).pause = p
	if !n.Until.IsZero() {
		p.timer = time.AfterFunc(n.Until.Sub(now), func() { j.resume(p) })
	}
	return false
}

// rareLocked returns the job's rare state, made if need be. An active
// state made for it before Start has no floor: what a Start catches up is
// the Start's to say. The caller holds j.mu.
func (j *Job) rareLocked(now time.Time) *rare {
	made := j.x == nil
	x := j.active(now)
	if made && j.state != jobStarted {
		x.floor = time.Time{}
	}
	return x.rareLocked()
}

// forgetPauseLocked stops the timer of the end of the job's pause, and,
// if drop, drops its note. The caller holds j.mu.
func (j *Job) forgetPauseLocked(drop bool) {
	x := j.x
	if x == nil || x.r == nil || x.r.pause == nil {
		return
	}
	if t := x.r.pause.timer; t != nil {
		t.Stop()
	}
	if drop {
		x.r.pause = nil
		x.tidyRareLocked()
	}
}

// PauseNote returns the note of the job's pause, and whether the job is
// paused. A pause without Because or ResumeAt has only its Since.
func (j *Job) PauseNote() (PauseNote, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.paused() || j.x == nil || j.x.r == nil || j.x.r.pause == nil {
		return PauseNote{}, j.paused()
	}
	return j.x.r.pause.note, true
}
