package cron

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/circulation-go/circulation"
)

// Follow makes t run the tasks of src, and keeps it in step with src until
// t stops: it reads src's definitions (and its calendars, if src is a
// CalendarSource: they replace those of SetCalendars, and a Source that
// is not one holds none) and applies them at once, then looks
// at src.Version every poll interval (WithPollInterval; 1s by default, so
// that a change is applied within 2s) and at once when src.Changes
// receives, and applies src's definitions again when the version has
// changed since the set it applied last. Every replica's Table following
// one Source so runs the same tasks. While t follows src, Pause and Resume
// change the definitions in src (see Pause).
//
// Follow returns an error only when t cannot follow src: if src cannot be
// read, Follow returns that error and t does not follow src; Follow may
// then be called again. A definition t refuses (a handler it does not
// have, a zone it cannot load: a *TaskError naming the field) does not
// stop it, nor its replicas, whatever one user typed: the task's previous
// definition stays in force, Tasks reports why (TaskState.Refused), and
// the error goes to the function of WithErrorHandler, if any, the first
// Apply's as the later ones'. ctx bounds the first read and Apply; the
// values of ctx, not its end, reach the later ones. A read that fails
// later is tried again at the next look, its error going to the same
// function.
//
// A Table follows one Source at most: Follow returns ErrFollowing if t
// follows one already, or another Follow is under way, and
// ErrTableStopped after Stop. While t follows src, an Apply of the caller
// holds until src's next change. Stop ends the following, and waits for a
// look under way. Follow panics if src is nil.
func (t *Table) Follow(ctx context.Context, src Source, opts ...FollowOption) error {
	if src == nil {
		panic("cron: Follow with a nil Source")
	}
	f := &follower{t: t, src: src, every: time.Second}
	for _, o := range opts {
		o.apply(f)
	}
	t.mu.Lock()
	switch {
	case t.stopped:
		t.mu.Unlock()
		return ErrTableStopped
	case t.follow != nil || t.joining:
		t.mu.Unlock()
		return ErrFollowing
	}
	t.joining = true
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.joining = false
		t.mu.Unlock()
	}()

	epoch := t.epoch()
	defs, cals, version, err := read(ctx, src)
	if err != nil {
		return fmt.Errorf("cron: Follow: reading the source: %w", err)
	}
	ch, applied := t.apply(ctx, defs, &cals, true, epoch)
	if errors.Is(applied, ErrTableStopped) {
		return applied
	}
	if f.onApply != nil {
		f.onApply(version, ch)
	}
	if applied != nil && f.onErr != nil {
		f.onErr(applied)
	}
	f.version = version
	f.ctx, f.cancel = context.WithCancel(context.WithoutCancel(ctx))
	f.trig = circulation.Bind(nil, f.look, circulation.WithContext(f.ctx))
	if ch := src.Changes(); ch != nil {
		f.wg.Go(func() { f.listen(ch) })
	}
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		_ = f.stop(context.Background()) // nothing of f's runs: it returns at once
		return ErrTableStopped
	}
	t.follow = f
	t.mu.Unlock()
	f.trig.FireAfter(f.every)
	return nil
}

// ErrFollowing is returned by Follow on a Table that follows a Source
// already.
var ErrFollowing = errors.New("cron: table follows a source already")

// A FollowOption configures Follow.
type FollowOption interface {
	apply(*follower)
}

type followOption func(*follower)

func (o followOption) apply(f *follower) { o(f) }

// WithPollInterval sets how often the Table looks at its Source's Version
// (default 1s). A d of zero or less means the default.
func WithPollInterval(d time.Duration) FollowOption {
	return followOption(func(f *follower) {
		if d > 0 {
			f.every = d
		}
	})
}

// WithErrorHandler makes the Table pass f every error of its looks at the
// Source: a failed Version or Tasks after the first read, and the error of
// each Apply, the first one's included, such as a definition refused
// (*TaskErrors, joined). f runs on the goroutine of the looks (the first
// time, on Follow's), one call at a time; it may call the Table's methods,
// except Stop with a context that outlives it. Without it, those errors
// are dropped: the Table keeps running what it ran, tries again at the
// next look, or the next change, and Tasks reports the refused
// definitions.
func WithErrorHandler(f func(error)) FollowOption {
	return followOption(func(fl *follower) { fl.onErr = f })
}

// WithApplyHandler makes the Table pass f what each Apply of the Source's
// definitions changed, the first one's included, with the Source's version
// it applied: to log that a change reached this replica, say. f runs on
// the goroutine of the looks (the first time, on Follow's), one call at a
// time, before the Apply's error goes to WithErrorHandler's function; it
// may call the Table's methods, except Stop with a context that outlives
// it.
func WithApplyHandler(f func(version int64, ch Changes)) FollowOption {
	return followOption(func(fl *follower) { fl.onApply = f })
}

// A follower keeps a Table in step with a Source: a Trigger looks at the
// Source's version, every interval and when the Source says it changed,
// and applies its definitions when the version changed.
type follower struct {
	t       *Table
	src     Source
	every   time.Duration
	onErr   func(error)
	onApply func(int64, Changes)

	ctx    context.Context // ends at the Table's Stop; the looks' contexts and SetPaused's derive from it
	cancel context.CancelFunc
	trig   *circulation.Trigger // runs look, one at a time
	wg     sync.WaitGroup       // listen

	// version is that of the set applied last. Follow writes it before
	// it makes trig, and only look, one run at a time, after.
	version int64
	outage  sourceOutage // the looks' failures to read the Source; only look uses it
}

// look is the Func of f's Trigger: it applies the Source's definitions if
// their version changed, and asks to look again after the interval.
func (f *follower) look(ctx context.Context) (time.Duration, bool) {
	err := f.sync(ctx)
	if errors.Is(err, ErrTableStopped) {
		return 0, false
	}
	if err != nil && ctx.Err() == nil && f.onErr != nil {
		f.onErr(err)
	}
	return f.every, true
}

// sync reads the Source's version, and its definitions if it changed, and
// applies them. A version is taken as applied once its Apply has been
// carried out, even if it refused definitions: they are not tried again
// until the Source changes.
func (f *follower) sync(ctx context.Context) (err error) {
	v, err := f.src.Version(ctx)
	if err != nil {
		if ctx.Err() == nil {
			f.failed(err)
		}
		return fmt.Errorf("cron: following the source: reading its version: %w", err)
	}
	if v == f.version {
		f.answered()
		return nil
	}
	epoch := f.t.epoch()
	defs, cals, v, err := read(ctx, f.src)
	if err != nil {
		if ctx.Err() == nil {
			f.failed(err)
		}
		return fmt.Errorf("cron: following the source: reading its definitions: %w", err)
	}
	f.answered()
	defer func() {
		// A Scheduler that refuses timers (a stopped wheel.Wheel) makes
		// Apply panic once it has carried out the change.
		if r := recover(); r != nil {
			err = fmt.Errorf("cron: following the source: %v", r)
		}
	}()
	ch, err := f.t.apply(ctx, defs, &cals, true, epoch)
	if !errors.Is(err, ErrTableStopped) {
		f.version = v
		if f.onApply != nil {
			f.onApply(v, ch)
		}
	}
	return err
}

// read reads the tasks of src, and its calendars if it is a
// CalendarSource (none otherwise), and returns the version of the
// definitions read: the calendars are read first, and if the tasks are of
// another version, the calendars' is returned, so that the next look
// reads them again.
func read(ctx context.Context, src Source) ([]Task, []Calendar, int64, error) {
	var cals []Calendar
	var cv int64
	cs, ok := src.(CalendarSource)
	if ok {
		var err error
		if cals, cv, err = cs.Calendars(ctx); err != nil {
			return nil, nil, 0, err
		}
	}
	defs, v, err := src.Tasks(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	if ok && cv != v {
		v = cv
	}
	return defs, cals, v, nil
}

// epoch returns t.controls.
func (t *Table) epoch() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.controls
}

// listen fires f's Trigger whenever ch receives, until ch is closed or
// the Table stops.
func (f *follower) listen(ch <-chan struct{}) {
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
			f.trig.Fire()
		case <-f.ctx.Done():
			return
		}
	}
}

// stop ends the following: no look starts any more, the look under way
// has its context cancelled, and stop waits for it and for listen.
func (f *follower) stop(ctx context.Context) error {
	f.cancel()
	err := f.trig.Close(ctx)
	f.wg.Wait()
	return err
}
