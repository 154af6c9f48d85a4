package cron_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
)

// A pause whose end has come is over for RunNow too, as Tasks says.
func TestTableRunNowAfterAPauseEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 100*time.Millisecond)}, cron.WithLocation(time.UTC))
		defer tab.Stop(context.Background())
		a := task("a", "h", "0 0 * * * *")
		a.Paused, a.PausedUntil = true, time.Now().Add(2*time.Second)
		_, err := tab.Apply(context.Background(), []cron.Task{a})
		require.NoError(t, err)
		time.Sleep(3 * time.Second)
		assert.False(t, stateOf(t, tab, "a").Task.Paused)
		assert.NoError(t, tab.RunNow("a"), "the pause is over")
	})
}
