package crondiff_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	netresearch "github.com/netresearch/go-cron"
	robfig "github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
)

var (
	monthNames = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	dayNames   = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
)

// randomField returns a random field of values min to max (names[i] for
// min+i, if given): a list of *, values, ranges and steps.
func randomField(r *rand.Rand, min, max int, names []string) string {
	value := func(v int) string {
		if names != nil && r.IntN(3) == 0 {
			name := names[v-min]
			if r.IntN(2) == 0 {
				name = strings.ToUpper(name)
			}
			return name
		}
		return fmt.Sprint(v)
	}
	n := 1 + r.IntN(3)
	if r.IntN(3) == 0 {
		n = 1
	}
	items := make([]string, n)
	for i := range items {
		lo := min + r.IntN(max-min+1)
		hi := lo + r.IntN(max-lo+1)
		step := 1 + r.IntN((max-min)/2+1)
		switch r.IntN(8) {
		case 0:
			items[i] = "*"
		case 1:
			items[i] = fmt.Sprintf("*/%d", step)
		case 2, 3:
			items[i] = value(lo)
		case 4, 5:
			items[i] = value(lo) + "-" + value(hi)
		case 6:
			items[i] = fmt.Sprintf("%s-%s/%d", value(lo), value(hi), step)
		case 7:
			items[i] = fmt.Sprintf("%d/%d", lo, step)
		}
	}
	if n == 1 && items[0] == "*" && r.IntN(4) == 0 {
		return "?"
	}
	return strings.Join(items, ",")
}

// randomSpec returns a random valid spec with five or six fields, or a
// descriptor.
func randomSpec(r *rand.Rand) string {
	if r.IntN(20) == 0 {
		return []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}[r.IntN(7)]
	}
	f := []string{
		randomField(r, 0, 59, nil),
		randomField(r, 0, 23, nil),
		randomField(r, 1, 31, nil),
		randomField(r, 1, 12, monthNames),
		randomField(r, 0, 6, dayNames),
	}
	if r.IntN(2) == 0 {
		f = append([]string{randomField(r, 0, 59, nil)}, f...)
	}
	return strings.Join(f, " ")
}

// starSemanticsDiffer reports whether robfig/cron reads the day fields of
// spec otherwise than crontab(5). crontab(5) calls a field that starts
// with * unrestricted; robfig/cron calls a field unrestricted if one of its
// items is * or ? without a step above 1.
func starSemanticsDiffer(spec string) bool {
	f := strings.Fields(spec)
	if len(f) < 5 {
		return false
	}
	dom, dow := f[len(f)-3], f[len(f)-1]
	vixie := func(s string) bool { return s[0] == '*' || s[0] == '?' }
	robfigStar := func(s string) bool {
		for item := range strings.SplitSeq(s, ",") {
			rng, step, _ := strings.Cut(item, "/")
			if (rng == "*" || rng == "?") && (step == "" || step == "1") {
				return true
			}
		}
		return false
	}
	return (vixie(dom) || vixie(dow)) != (robfigStar(dom) || robfigStar(dow))
}

// dowFromStep reports whether the day of the week of spec has an item a/n.
func dowFromStep(spec string) bool {
	f := strings.Fields(spec)
	for item := range strings.SplitSeq(f[len(f)-1], ",") {
		if rng, _, ok := strings.Cut(item, "/"); ok && rng != "*" && !strings.Contains(rng, "-") {
			return true
		}
	}
	return false
}

// Next agrees with robfig/cron's and netresearch/go-cron's in UTC, which
// has no daylight saving, for random valid specs and instants, wherever
// those read the spec as crontab(5) does and look far enough ahead.
func TestNextAgreesWithPeersInUTC(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	robfigParser := robfig.NewParser(robfig.SecondOptional | robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)
	nrParser := netresearch.MustNewParser(netresearch.SecondOptional | netresearch.Minute | netresearch.Hour | netresearch.Dom | netresearch.Month | netresearch.Dow | netresearch.Descriptor | netresearch.DowOrDom)
	const specs, instants = 800, 50
	var compared, differentStars, beyondHorizon, nrRejects int
	for range specs {
		spec := randomSpec(r)
		ours, err := cron.Parse(spec, time.UTC)
		require.NoError(t, err, spec)
		theirs, err := robfigParser.Parse(spec)
		require.NoError(t, err, spec)
		nr, err := nrParser.Parse(spec)
		switch {
		case err != nil:
			nrRejects++ // such as a step longer than its range: "28-44/24"
		case dowFromStep(spec):
			nr = nil // netresearch/go-cron reads 3/4 as 3-7/4: Wednesdays and Sundays
		}
		if starSemanticsDiffer(spec) {
			differentStars++
			continue
		}
		compared++
		for range instants {
			at := time.Unix(r.Int64N(4102444800), r.Int64N(1e9)).UTC() // 1970 to 2100
			want, got := theirs.Next(at), ours.Next(at)
			if want.IsZero() && got.Sub(at) > 5*366*24*time.Hour {
				beyondHorizon++ // robfig/cron looks 5 years ahead
				continue
			}
			require.True(t, want.Equal(got), "%q after %v: robfig/cron %v, ours %v", spec, at, want, got)
			if nr != nil {
				assert.True(t, nr.Next(at).Equal(got), "%q after %v: netresearch/go-cron %v, ours %v", spec, at, nr.Next(at), got)
			}
		}
	}
	t.Logf("%d specs compared at %d instants each; %d read otherwise by robfig/cron; %d answers beyond its 5 years; %d specs rejected by netresearch/go-cron",
		compared, instants, differentStars, beyondHorizon, nrRejects)
	assert.GreaterOrEqual(t, compared, 500)
}
