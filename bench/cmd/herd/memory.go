package main

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	robfig "github.com/robfig/cron/v3"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/wheel"
)

// memory runs the herd in this process, on package schedule (a wheel, the
// spec read by package cron), robfig/cron v3 or gocron v2: every job a
// cron spec for the same second of each day, as users write "every day
// at 09:00", each library reading it with its own parser, in UTC.
func memory(o options) error {
	begin := time.Now()
	if o.Lead == 0 {
		o.Lead = 3*time.Second + time.Duration(o.Jobs/50_000)*time.Second
	}
	due := time.Now().Add(o.Lead).Truncate(time.Second)
	late := make([]atomic.Int64, o.Jobs)
	var started atomic.Int64
	run := func(i int) {
		if late[i].CompareAndSwap(0, int64(time.Since(due))+1) {
			started.Add(1)
		}
	}
	u := due.UTC()
	spec := fmt.Sprintf("%d %d %d * * *", u.Second(), u.Minute(), u.Hour())
	var stop func()
	switch o.Lib {
	case "schedule":
		w := wheel.New()
		sched, err := cron.Parse(spec, time.UTC)
		if err != nil {
			return err
		}
		jobs := make([]*schedule.Job, o.Jobs)
		for i := range jobs {
			jobs[i] = schedule.NewJob("h"+strconv.Itoa(i), sched,
				func(context.Context, schedule.Run) error { run(i); return nil }, schedule.WithScheduler(w))
		}
		if err := each(jobs, func(j *schedule.Job) error { return j.Start(context.Background()) }); err != nil {
			return err
		}
		stop = func() {
			_ = each(jobs, func(j *schedule.Job) error { return j.Stop(context.Background()) })
			w.Stop()
		}
	case "robfig":
		c := robfig.New(robfig.WithSeconds(), robfig.WithLocation(time.UTC))
		for i := range o.Jobs {
			if _, err := c.AddFunc(spec, func() { run(i) }); err != nil {
				return err
			}
		}
		c.Start()
		stop = func() { <-c.Stop().Done() }
	case "gocron":
		s, err := gocron.NewScheduler(gocron.WithLocation(time.UTC))
		if err != nil {
			return err
		}
		for i := range o.Jobs {
			if _, err := s.NewJob(gocron.CronJob(spec, true), gocron.NewTask(func() { run(i) })); err != nil {
				return err
			}
		}
		s.Start()
		stop = func() { _ = s.Shutdown() }
	default:
		return fmt.Errorf("-lib %q: want schedule, robfig or gocron", o.Lib)
	}
	setup := time.Since(begin)
	if time.Now().After(due) {
		return fmt.Errorf("the jobs were set up after the due time: give a longer -lead than %v", o.Lead)
	}
	deadline := due.Add(o.Timeout)
	pk := watchPeaks()
	for started.Load() < int64(o.Jobs) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	routines, stacks, peakHeap := pk.stop()
	heap := liveHeap()
	stop()
	r := result{Node: o.Lib, Setup: setup, RSS: peakRSS(), Heap: heap, Routines: routines, Stacks: stacks, PeakHeap: peakHeap, CPU: cpuTime()}
	for i := range late {
		if l := late[i].Load(); l != 0 {
			r.Starts = append(r.Starts, int32(i))
			r.Late = append(r.Late, l-1)
		}
	}
	return report(o, due, 0, []result{r})
}
