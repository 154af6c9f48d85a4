package crondiff_test

import (
	"testing"
	"time"

	netresearch "github.com/netresearch/go-cron"
	robfig "github.com/robfig/cron/v3"

	"github.com/circulation-go/circulation/cron"
)

// BenchmarkNext measures Next against robfig/cron and netresearch/go-cron
// on the same specs and times, stepping from one run to the next from
// 2026. Compare them with benchstat -col /impl:
//
//	cd bench && go test -run '^$' -bench '^BenchmarkNext$' -count 6 ./crondiff > next.txt
//	go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da -col /impl next.txt
func BenchmarkNext(b *testing.B) {
	specs := []struct{ name, spec string }{
		{"minutely", "* * * * *"},
		{"daily", "30 2 * * *"},
		{"weekdays", "0 9 * * 1-5"},
		{"yearly", "0 0 1 1 *"},
		{"leapday", "0 0 29 2 *"},
	}
	for _, zone := range []string{"UTC", "America/New_York"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			b.Fatal(err)
		}
		for _, sp := range specs {
			ours, err := cron.Parse(sp.spec, loc)
			if err != nil {
				b.Fatal(err)
			}
			rf, err := robfig.ParseStandard(sp.spec)
			if err != nil {
				b.Fatal(err)
			}
			nr, err := netresearch.MustNewParser(netresearch.Minute | netresearch.Hour | netresearch.Dom | netresearch.Month | netresearch.Dow | netresearch.DowOrDom).Parse(sp.spec)
			if err != nil {
				b.Fatal(err)
			}
			for _, impl := range []struct {
				name string
				next func(time.Time) time.Time
			}{{"cron", ours.Next}, {"robfig", rf.Next}, {"netresearch", nr.Next}} {
				b.Run("zone="+zone+"/spec="+sp.name+"/impl="+impl.name, func(b *testing.B) {
					b.ReportAllocs()
					start := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
					end := time.Date(2200, 1, 1, 0, 0, 0, 0, loc)
					at := start
					for b.Loop() {
						at = impl.next(at)
						if at.IsZero() || at.After(end) {
							at = start
						}
					}
				})
			}
		}
	}
}

// BenchmarkParse measures Parse against the peers' parsers.
func BenchmarkParse(b *testing.B) {
	const spec = "0 */5 9-17 * * mon-fri"
	p := robfig.NewParser(robfig.Second | robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow)
	np := netresearch.MustNewParser(netresearch.Second | netresearch.Minute | netresearch.Hour | netresearch.Dom | netresearch.Month | netresearch.Dow | netresearch.DowOrDom)
	for _, impl := range []struct {
		name  string
		parse func() error
	}{
		{"cron", func() error { _, err := cron.Parse(spec, time.UTC); return err }},
		{"robfig", func() error { _, err := p.Parse(spec); return err }},
		{"netresearch", func() error { _, err := np.Parse(spec); return err }},
	} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := impl.parse(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
