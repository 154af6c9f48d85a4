package cron_test

import (
	"errors"
	"testing"
	"time"

	"github.com/circulation-go/circulation/cron"
)

// FuzzParse checks that Parse never panics, that it rejects with a
// *ParseError, and that the Next of what it accepts is after t or zero,
// in a zone with daylight saving, for any t.
func FuzzParse(f *testing.F) {
	for _, spec := range []string{
		"30 2 * * *", "30 1 * * *", "*/30 * * * *", "0 0 30 2 *", "0 0 29 2 mon",
		"*/7 5-50/3 1,2,3 */2 1-5", "? ? ? ? ? ?", "0 0 0 L * ?", "@every 1h", "@daily",
		"CRON_TZ=Australia/Lord_Howe 15 2 * * *", "TZ=America/Santiago @midnight",
		"TZ= 1 * * * *", "59 23 31 12 fri", "0-59/59 0-23/23 1-31/30 1-12/11 0-7/7",
		"1-2-3 * * * *", "*/ * * * *", "@every -1s", "TZ=UTC", "\x00 * * * *",
		"*/9223372036854775807 * * * *", "0 0 1-31/99999999999999 * *",
		"*/70 * * * *", "0 */90 * * * *", "10-20/11 * * * *", "50/15 * * * *", "*/60 * * * *",
	} {
		for _, at := range []int64{0, 1793430000, -62135596800, 1<<62 - 1, -1 << 62} {
			f.Add(spec, at, int64(0))
		}
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, spec string, sec, nsec int64) {
		s, err := cron.Parse(spec, ny)
		strict, serr := cron.ParseStrict(spec, ny)
		var pe *cron.ParseError
		if serr != nil && !errors.As(serr, &pe) {
			t.Fatalf("ParseStrict(%q): %T %v, not a *ParseError", spec, serr, serr)
		}
		if err != nil {
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q): %T %v, not a *ParseError", spec, err, err)
			}
			if serr == nil {
				t.Fatalf("ParseStrict(%q) accepts what Parse refuses: %v", spec, err)
			}
			return
		}
		at := time.Unix(sec, nsec%1e9)
		if serr == nil && !strict.Next(at).Equal(s.Next(at)) {
			t.Fatalf("ParseStrict(%q).Next(%v) = %v, Parse's %v", spec, at, strict.Next(at), s.Next(at))
		}
		for range 3 {
			next := s.Next(at)
			if next.IsZero() {
				return
			}
			if !next.After(at) {
				t.Fatalf("Parse(%q).Next(%v) = %v, not after it", spec, at, next)
			}
			at = next
		}
	})
}
