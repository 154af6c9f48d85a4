package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/circulation-go/circulation/examples/internal/cmdtest"
)

func TestMain(m *testing.M) {
	cmdtest.RunMainIfChild(main)
	goleak.VerifyTestMain(m)
}

// story runs the whole story in the test's synctest bubble, where time is
// fake and exact, with the client wired to the config center in memory: a
// goroutine blocked on a real socket would keep the bubble's clock from
// advancing.
func story(t *testing.T) *report {
	t.Helper()
	var out bytes.Buffer
	r, err := run(context.Background(), &out, config{interval: time.Second, connect: inMemory})
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the story as printed:\n%s", out.String())
		}
	})
	return r
}

func inMemory(h http.Handler) (*http.Client, string, func(), error) {
	return &http.Client{Transport: handlerTransport{h}}, "http://config.test", func() {}, nil
}

// handlerTransport is an http.RoundTripper that calls a handler directly.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	return rec.Result(), nil
}

const ms = time.Millisecond

// starts returns when each pull started, and why.
func starts(r *report) map[time.Duration]string {
	m := make(map[time.Duration]string)
	for _, p := range r.pulls {
		m[p.start] = p.why
	}
	return m
}

func TestPullsEveryIntervalAfterThePreviousPull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t)
		require.GreaterOrEqual(t, len(r.pulls), 2)
		assert.Equal(t, pull{start: 0, end: 200 * ms, why: "switch on", version: 1}, r.pulls[0])
		assert.Equal(t, pull{start: 1200 * ms, end: 1400 * ms, why: "timer", version: 1}, r.pulls[1])
	})
}

// Six "update now" messages arrive between 1.5s and 1.58s, while pull 3
// runs from 1.5s to 1.7s: the first starts it, the other five make exactly
// one more pull, which starts 250ms after pull 3 started (the minimum
// interval), not the moment pull 3 ends.
func TestBurstsCoalesce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t)
		var during []pull
		for _, p := range r.pulls {
			if p.start >= 1500*ms && p.start < 2000*ms {
				during = append(during, p)
			}
		}
		require.Len(t, during, 2, "pulls between 1.5s and 2s: %+v", during)
		assert.Equal(t, pull{start: 1500 * ms, end: 1700 * ms, why: "1 update message", version: 2}, during[0])
		assert.Equal(t, pull{start: 1750 * ms, end: 1950 * ms, why: "5 update messages", version: 3}, during[1])
	})
}

// WithMinInterval: no two pulls start less than a quarter of the interval
// apart, so none starts the moment the one before it ends.
func TestNoBackToBackPulls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t)
		require.Greater(t, len(r.pulls), 2)
		for i := 1; i < len(r.pulls); i++ {
			assert.GreaterOrEqual(t, r.pulls[i].start-r.pulls[i-1].start, 250*ms, "pull %d starts too soon after pull %d", i+1, i)
			assert.Greater(t, r.pulls[i].start, r.pulls[i-1].end, "pull %d starts the moment pull %d ends", i+1, i)
		}
	})
}

func TestPullsNeverOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t)
		assert.Equal(t, int32(1), r.maxInFlight, "pulls in flight at once, as the config center saw them")
		for i := 1; i < len(r.pulls); i++ {
			assert.GreaterOrEqual(t, r.pulls[i].start, r.pulls[i-1].end, "pull %d starts before pull %d ends", i+1, i)
		}
	})
}

// Version 3 is published while version 2 is being pulled: the pull the
// messages cause fetches it, and at the end the latest version is in use.
func TestLatestConfigWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t)
		got := map[int64]time.Duration{} // version -> first pull that got it
		for _, p := range r.pulls {
			if _, ok := got[p.version]; !ok && p.err == nil {
				got[p.version] = p.start
			}
		}
		assert.Equal(t, map[int64]time.Duration{1: 0, 2: 1500 * ms, 3: 1750 * ms, 4: 5000 * ms}, got)
		assert.Equal(t, int64(4), r.latest)
		assert.Equal(t, r.latest, r.inUse)
	})
}

// At 2s the interval changes from 1s to 500ms: the pull due at 2.95s is
// replaced by one at 2.5s, and from then on pulls start 500ms after the
// previous one ends.
func TestIntervalChangeTakesEffectAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := starts(story(t))
		assert.NotContains(t, s, 2950*ms)
		assert.Equal(t, "new interval", s[2500*ms])
		assert.Equal(t, "timer", s[3200*ms])
		assert.Equal(t, "timer", s[3900*ms])
	})
}

// The switch goes off at 4s, in the middle of the pull that started at
// 3.9s: Close cancels that pull at once, nothing runs until the switch is
// on again at 5s, and the messages that arrive meanwhile are ignored.
func TestSwitchStopsItAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t)
		var cancelled []pull
		for _, p := range r.pulls {
			if p.err != nil {
				cancelled = append(cancelled, p)
			}
			if p.start > 4000*ms && p.start < 5000*ms {
				t.Errorf("a pull started at %v, while the switch was off", p.start)
			}
		}
		assert.Equal(t, []pull{{start: 3900 * ms, end: 4000 * ms, why: "timer", err: context.Canceled}}, cancelled)
		assert.Equal(t, "switch on", starts(r)[5000*ms])
		assert.Equal(t, 8, r.messages)
		assert.Equal(t, 2, r.ignored)
	})
}

// A consumer that loaded the Trigger just before the switch went off fires
// it after Close: the Fire does nothing, with no lock between the two.
func TestFireAfterSwitchOffDoesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		center := &configCenter{latency: 200 * ms}
		client, url, _, _ := inMemory(center)
		l := &loader{log: &timeline{w: io.Discard, start: time.Now()}, client: client, url: url, interval: time.Second, gap: 250 * ms}
		l.switchOn()
		tr := l.reload.Load()
		time.Sleep(500 * ms) // pull 1 has run
		require.NoError(t, l.switchOff(true))
		tr.Fire()
		tr.FireAfter(0)
		tr.FireWithin(0)
		l.updateNow(1)
		time.Sleep(time.Hour)
		assert.Len(t, l.report.pulls, 1, "pulls after the switch went off: %+v", l.report.pulls)
		assert.Equal(t, 1, l.report.ignored)
	})
}

// An interrupt at 1.505s comes while pull 3 runs and two "update now"
// messages are still on their way: Close cancels the pull at once, the
// two messages find the switch off, and nothing pulls afterwards.
func TestInterruptedDuringABurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 1505*ms)
		defer cancel()
		r, err := run(ctx, io.Discard, config{interval: time.Second, connect: inMemory})
		require.NoError(t, err)
		require.NotEmpty(t, r.pulls)
		last := r.pulls[len(r.pulls)-1]
		assert.Equal(t, pull{start: 1500 * ms, end: 1505 * ms, why: "1 update message", err: context.Canceled}, last)
		assert.Equal(t, 3, r.messages)
		assert.Equal(t, 2, r.ignored)
		n := len(r.pulls)
		time.Sleep(time.Hour)
		assert.Len(t, r.pulls, n, "a pull started after run returned")
	})
}

// The real program, over a real loopback connection and the real clock:
// the timing may vary on a loaded machine, what is checked does not.
func TestLoopback(t *testing.T) {
	var out bytes.Buffer
	r, err := run(context.Background(), &out, config{interval: minInterval})
	require.NoError(t, err)
	assert.Equal(t, int32(1), r.maxInFlight, out.String())
	assert.NotEmpty(t, r.pulls)
	assert.Contains(t, out.String(), "config center at http://127.0.0.1:")
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-interval", "300ms"}, nil)
	require.NoError(t, err)
	assert.Equal(t, 300*ms, cfg.interval)
	cfg, err = parseFlags(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, time.Second, cfg.interval)
}

func TestBadInputExitsWithStatus2(t *testing.T) {
	cmdtest.BadInput{
		"-interval 0":    "configreload: -interval must be between 100ms and 1.5s, got 0s (see -h)",
		"-interval 10s":  "configreload: -interval must be between 100ms and 1.5s, got 10s (see -h)",
		"-interval soon": "configreload: invalid value \"soon\" for flag -interval: parse error (see -h)",
		"-speed 2":       "configreload: flag provided but not defined: -speed (see -h)",
		"now":            "configreload: unexpected argument \"now\" (see -h)",
	}.Check(t)
}

func TestHelp(t *testing.T) {
	stdout, stderr, code := cmdtest.Run(t, "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "-interval d")
	assert.Empty(t, stdout)
}
