package crondiff_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/adhocore/gronx"
	"github.com/hashicorp/cronexpr"
	netresearch "github.com/netresearch/go-cron"
	robfig "github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
)

// A peer is another cron library, reduced to its Next for a five-field
// spec: the next time after t, read in t's location.
type peer struct {
	name string
	next func(t *testing.T, spec string) func(time.Time) time.Time
}

var peers = []peer{
	{"robfig/cron v3.0.1", func(t *testing.T, spec string) func(time.Time) time.Time {
		s, err := robfig.ParseStandard(spec)
		require.NoError(t, err)
		return s.Next
	}},
	{"hashicorp/cronexpr v1.1.3", func(t *testing.T, spec string) func(time.Time) time.Time {
		e, err := cronexpr.Parse(spec)
		require.NoError(t, err)
		return e.Next
	}},
	{"adhocore/gronx v1.20.4", func(t *testing.T, spec string) func(time.Time) time.Time {
		require.True(t, gronx.IsValid(spec))
		return func(at time.Time) time.Time {
			next, err := gronx.NextTickAfter(spec, at, false)
			require.NoError(t, err)
			return next
		}
	}},
	{"netresearch/go-cron v0.9.1", func(t *testing.T, spec string) func(time.Time) time.Time {
		s, err := netresearch.ParseStandard(spec)
		require.NoError(t, err)
		return s.Next
	}},
	{"circulation/cron", func(t *testing.T, spec string) func(time.Time) time.Time {
		s, err := cron.Parse("CRON_TZ=America/New_York "+spec, nil)
		require.NoError(t, err)
		return s.Next
	}},
}

// dstRow measures a parser's Next in America/New_York in 2026, where the
// clocks go 02:00 -> 03:00 on March 8 and 02:00 -> 01:00 on November 1:
// what `30 2 * * *` does on March 8, and how often `30 1 * * *` and
// `0 * * * *` run in the hour from 01:00 on November 1.
func dstRow(t *testing.T, p peer) (spring, fall string) {
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	// times returns the runs of spec from one day to the next, local.
	times := func(spec string, from, to time.Time) []time.Time {
		next := p.next(t, spec)
		var out []time.Time
		for at := next(from); !at.IsZero() && at.Before(to) && len(out) < 100; at = next(at) {
			out = append(out, at.In(ny))
		}
		return out
	}
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, ny) }

	spring = "skips the day"
	for _, at := range times("30 2 * * *", day(2026, 3, 7), day(2026, 3, 10)) {
		if at.Day() == 8 {
			spring = at.Format("15:04")
		}
	}
	hourOne := func(spec string) int {
		n := 0
		for _, at := range times(spec, day(2026, 10, 31), day(2026, 11, 2)) {
			if at.Day() == 1 && at.Hour() == 1 {
				n++
			}
		}
		return n
	}
	fall = map[int]string{0: "never runs", 1: "runs once", 2: "runs twice"}[hourOne("30 1 * * *")]
	if hourOne("0 * * * *") != 2 {
		fall += ", but `0 * * * *` loses the repeated hour"
	}
	return spring, fall
}

// TestPeersDaylightSaving measures the daylight-saving table of docs/cron.md:
//
//	cd bench && go test -run TestPeersDaylightSaving -v ./crondiff
func TestPeersDaylightSaving(t *testing.T) {
	var b strings.Builder
	b.WriteString("| | spring forward, `30 2 * * *` | fall back, `30 1 * * *` |\n| --- | --- | --- |\n")
	rows := map[string][2]string{}
	for _, p := range peers {
		spring, fall := dstRow(t, p)
		rows[p.name] = [2]string{spring, fall}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", p.name, spring, fall)
	}
	t.Log("America/New_York, 2026:\n" + b.String())
	assert.Equal(t, map[string][2]string{
		"robfig/cron v3.0.1":         {"skips the day", "runs twice"},
		"hashicorp/cronexpr v1.1.3":  {"skips the day", "runs twice"},
		"adhocore/gronx v1.20.4":     {"skips the day", "runs once, but `0 * * * *` loses the repeated hour"},
		"netresearch/go-cron v0.9.1": {"03:30", "runs twice"},
		"circulation/cron":           {"03:00", "runs once"},
	}, rows)
}
