package schedule

import (
	"context"
	"errors"
	"reflect"
	"time"
)

// A LastReader is a Store that reads the last records of many jobs in one
// call. StartAll uses it, so that starting a hundred thousand jobs on one
// database reads their last records in a few statements, not one each.
type LastReader interface {
	Store
	// LastOf returns the record with the latest Due of each of jobs that
	// has one, by job name; a job with none is absent. It must not
	// modify jobs, nor keep it.
	LastOf(ctx context.Context, jobs []string) (map[string]Record, error)
}

// LastOf returns the record with the latest Due of each of jobs that has
// one in s, by job name; a job with none is absent. It reads them in one
// call if s is a LastReader, and with one Last each otherwise, in order,
// until one fails: a store that is down costs one call, not one a job.
// Then, and if ctx is done first, it returns the records it read before,
// and the error.
func LastOf(ctx context.Context, s Store, jobs []string) (map[string]Record, error) {
	if lr, ok := s.(LastReader); ok {
		m, err := lr.LastOf(ctx, jobs)
		if m == nil {
			m = map[string]Record{}
		}
		return m, err
	}
	m := make(map[string]Record, len(jobs))
	for _, j := range jobs {
		if err := ctx.Err(); err != nil {
			return m, err
		}
		r, err := s.Last(ctx, j)
		switch {
		case err == nil:
			m[j] = r
		case !errors.Is(err, ErrNoRecord):
			return m, err
		}
	}
	return m, nil
}

// A StartError reports a job that StartAll did not start, and why: Start's
// error.
type StartError struct {
	Job *Job
	Err error
}

func (e *StartError) Error() string { return e.Err.Error() }

func (e *StartError) Unwrap() error { return e.Err }

// StartAll starts each of jobs as Start does, and returns a *StartError
// for each of those that did not start, joined. The jobs whose Store is a
// LastReader have their last records read together, in one call per Store;
// should that call fail, each of them starts as a job whose Last failed
// does. Those with no record on a Store that is also a SharedStore have
// their times read together too, with SinceOf.
// Jobs already started, or stopped, get Start's errors; nil jobs are
// skipped. If a job's Scheduler refuses its timer (a stopped wheel.Wheel),
// StartAll starts the others, and then passes the first such panic on to
// its caller, as Start does.
func StartAll(ctx context.Context, jobs ...*Job) error {
	var refused any
	start := func(j *Job, read *lastRead) (err error) {
		defer func() {
			if v := recover(); v != nil {
				if refused == nil {
					refused = v
				}
				err = nil // the job started, with no next slot
			}
		}()
		return j.start(ctx, read)
	}
	defer func() {
		if refused != nil {
			panic(refused)
		}
	}()
	byStore := map[LastReader][]*Job{}
	var rest []*Job
	for _, j := range jobs {
		if j == nil {
			continue
		}
		if lr, ok := j.cfg.store.(LastReader); ok && isKey(lr) {
			byStore[lr] = append(byStore[lr], j)
		} else {
			rest = append(rest, j)
		}
	}
	var errs []error
	for lr, js := range byStore {
		names := make([]string, len(js))
		for i, j := range js {
			names[i] = j.name
		}
		lasts, err := lr.LastOf(ctx, names)
		if err != nil && ctx.Err() != nil {
			for _, j := range js {
				errs = append(errs, &StartError{Job: j, Err: ctx.Err()})
			}
			continue
		}
		reads := make([]*lastRead, len(js))
		var since map[string]time.Time // of the jobs with no record, on a SharedStore
		now := time.Now().Round(0)
		for i, j := range js {
			read := &lastRead{err: err}
			if err == nil {
				if r, ok := lasts[j.name]; ok {
					read.rec = r
				} else {
					read.err = ErrNoRecord
					if _, ok := lr.(SharedStore); ok {
						if since == nil {
							since = map[string]time.Time{}
						}
						since[j.name] = j.sinceBase(now)
						read.sinceRead = true
					}
				}
			}
			reads[i] = read
		}
		if len(since) > 0 {
			got, err := lr.(SharedStore).SinceOf(ctx, since)
			if err == nil {
				for i, j := range js {
					reads[i].since = got[j.name]
				}
			}
		}
		for i, j := range js {
			if err := start(j, reads[i]); err != nil {
				errs = append(errs, &StartError{Job: j, Err: err})
			}
		}
	}
	for _, j := range rest {
		if err := start(j, nil); err != nil {
			errs = append(errs, &StartError{Job: j, Err: err})
		}
	}
	return errors.Join(errs...)
}

// isKey reports whether s can be a map key: it is comparable, and equal
// to itself.
func isKey(s Store) bool {
	v := reflect.ValueOf(s)
	return v.Comparable() && v.Equal(v)
}
