package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// TestResumeByAReplicaOfVersion7 resumes, during a rolling deploy, with
// the statement of a replica of schema version 7, a task that a replica
// of version 8 paused with a note: it sets paused only, and leaves
// pause_note and paused_until, which a definition that is not paused
// does not have: they read as none, and a Table loads it.
func TestResumeByAReplicaOfVersion7(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		tb := tableFor(t)
		s := newStore(t, b, dsn)
		db := openDB(t, b.driver, dsn)
		d := cron.Task{Name: "a", Handler: "h", Spec: "@hourly", Permanent: true}
		_, err := s.Definitions().Create(ctx, d)
		require.NoError(t, err)
		require.NoError(t, s.Definitions().SetPaused(ctx, "a", true, schedule.PauseNote{Note: "upgrade", Until: time.Now().Add(time.Hour)}))
		// version 7's pauseTaskSQL, resuming
		_, err = db.Exec(`UPDATE `+tb+`_tasks SET paused = $2, version = version + 1, updated_at = $3 WHERE name = $1 AND paused <> $2`,
			"a", false, "2030-01-01T00:00:00.000000Z")
		require.NoError(t, err)
		got, _, err := s.Definitions().Get(ctx, "a")
		require.NoError(t, err)
		assert.False(t, got.Paused)
		assert.Empty(t, got.PauseNote)
		assert.True(t, got.PausedUntil.IsZero())
		tab := cron.NewTable(map[string]cron.Handler{"h": func(_ context.Context, _ string, _ schedule.Run) error { return nil }})
		defer tab.Stop(ctx)
		_, err = tab.Apply(ctx, []cron.Task{got})
		assert.NoError(t, err, "a version 7 replica resumed it")
	})
}
