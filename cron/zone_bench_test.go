package cron

import (
	"testing"
	"time"
)

// BenchmarkZone measures what loading a zone costs a task or a spec:
// time.LoadLocation, which reads and parses the zone's file at each call,
// against loadZone, which keeps each location once loaded.
//
//	cd cron && go test -run '^$' -bench '^BenchmarkZone$' -count 3 .
func BenchmarkZone(b *testing.B) {
	for _, c := range []struct {
		name string
		load func(string) (*time.Location, error)
	}{{"load=each", time.LoadLocation}, {"load=once", loadZone}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.load("Europe/Paris"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
