package cron

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The zones that specs and tasks name are loaded once, and kept by name,
// but only in clean form: time.LoadLocation also loads "America//New_York"
// and "America/./New_York", each a name of its own, and specs come from
// users, so 200 spellings of one zone keep nothing more. Each still loads,
// with the name it was given.
func TestZoneCacheKeepsCleanNamesOnly(t *testing.T) {
	count := func() int {
		n := 0
		zones.Range(func(any, any) bool { n++; return true })
		return n
	}
	a, err := loadZone("America/New_York")
	require.NoError(t, err)
	b, err := loadZone("America/New_York")
	require.NoError(t, err)
	assert.Same(t, a, b, "a clean name is kept")
	_, err = Parse("CRON_TZ=America/New_York 0 9 * * *", nil)
	require.NoError(t, err)
	before := count()
	for i := range 200 {
		zone := "America/" + strings.Repeat("./", i%100) + strings.Repeat("/", i/100) + "New_York"
		s, err := Parse("CRON_TZ="+zone+" 0 9 * * *", nil)
		require.NoError(t, err, zone)
		next := s.Next(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC))
		assert.Equal(t, time.Date(2026, 7, 1, 13, 0, 0, 0, time.UTC), next.UTC(), zone)
	}
	assert.Equal(t, before, count(), "locations kept for spellings of one zone")
}
