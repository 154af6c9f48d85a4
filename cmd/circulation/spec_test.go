package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDescribe(t *testing.T) {
	for spec, want := range map[string]string{
		"0 9 * * 1-5":                          "At 09:00, Monday through Friday; if the clocks skip or repeat its time, it runs once (at the jump if skipped)\n",
		"CRON_TZ=Europe/Paris 0 9 * * MON-FRI": "At 09:00 in Europe/Paris, Monday through Friday\n",
		"*/5 * * * *":                          "Every 5 minutes\n",
		"@every 90m":                           "Every 1h30m0s\n",
		"0 0 30 2 *":                           "At 00:00 on February 30; never runs, as its months have no such day\n",
	} {
		assert.Equal(t, want, ok(t, "describe", spec), spec)
	}
	var d struct{ Spec, Description string }
	require.NoError(t, json.Unmarshal([]byte(ok(t, "describe", "-json", "*/5 * * * *")), &d))
	assert.Equal(t, "*/5 * * * *", d.Spec)
	assert.Equal(t, "Every 5 minutes", d.Description)

	r := cmd(t, "", "describe", "61 * * * *")
	assert.Equal(t, result{code: 1, err: "circulation: cron: minute \"61\": value 61 out of range 0-59\n"}, r, "a bad spec names its field")
	r = cmd(t, "", "describe")
	assert.Equal(t, 2, r.code)
}

func TestNext(t *testing.T) {
	// Across the spring-forward of New York: 02:30 does not exist on
	// March 10, 2030, and runs at the jump.
	assert.Equal(t, "Sat 2030-03-09 02:30:00 EST\nSun 2030-03-10 03:00:00 EDT\nMon 2030-03-11 02:30:00 EDT\n",
		ok(t, "next", "30 2 * * *", "-zone", "America/New_York", "-from", "2030-03-09T00:00:00Z", "-n", "3"))
	assert.Equal(t, "Tue 2030-01-01 09:00:00 CET\nWed 2030-01-02 09:00:00 CET\n",
		ok(t, "next", "-n", "2", "0 9 * * 1-5", "-zone", "Europe/Paris", "-from", "2030-01-01T00:00:00Z"))
	assert.Equal(t, "Tue 2030-01-01 00:05:00 UTC\n", ok(t, "next", "*/5 * * * *", "-n", "1", "-from", "2030-01-01T00:00:00Z"), "in the machine's zone")

	var times []time.Time
	require.NoError(t, json.Unmarshal([]byte(ok(t, "next", "-json", "0 9 * * *", "-zone", "Asia/Tokyo", "-n", "2", "-from", "2030-01-01T00:00:00Z")), &times))
	require.Len(t, times, 2)
	assert.True(t, times[0].Equal(time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)), times[0])
	assert.True(t, times[1].Equal(time.Date(2030, 1, 3, 0, 0, 0, 0, time.UTC)), times[1])
	assert.Equal(t, "no time to run at\n", ok(t, "next", "0 0 30 2 *"))
	ok(t, "next", "@every 1m", "-n", "1") // from now

	r := cmd(t, "", "next", "*/70 * * * *", "-n", "1", "-from", "2030-01-01T00:00:00Z", "-zone", "UTC")
	assert.Equal(t, result{out: "Tue 2030-01-01 01:00:00 UTC\n",
		err: "circulation: warning: a definition with this spec is refused: cron: minute \"*/70\": step 70 is longer than the 60 values of 0-59 it steps through: only 0 would match\n"}, r)
	r = cmd(t, "", "next", "0 9 * * *", "-zone", "Mars/Base")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.err, `circulation: zone "Mars/Base": `)
	for _, bad := range [][]string{{"next"}, {"next", "* * * * *", "-n", "0"}, {"next", "* * * * *", "-from", "yesterday"}, {"next", "a", "b"}} {
		assert.Equal(t, 2, cmd(t, "", bad...).code, bad)
	}
}
