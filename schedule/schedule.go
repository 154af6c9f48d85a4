// Package schedule runs jobs on schedules, with overlap and missed-run
// policies and execution records.
package schedule

import "time"

// A Schedule says when a job's runs fall due.
type Schedule interface {
	// Next returns the first time strictly after t, or the zero Time if
	// there is none.
	Next(t time.Time) time.Time
}

// Reason says why a run happened.
type Reason uint8

const (
	Scheduled Reason = iota // its slot fell due
	CatchUp                 // its slot was missed and the Misfire policy runs it late
	Manual                  // RunNow
	Recovered               // its node died mid-run and another took the slot over (LeaseStore)
)
