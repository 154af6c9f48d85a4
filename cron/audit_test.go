package cron_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/cron"
)

// Clip cuts each text at a rune boundary, within its bound, marking the
// cut, and sets a zero At; Max bounds a query's Limit.
func TestAuditEntryClip(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	e := cron.AuditEntry{Actor: strings.Repeat("é", cron.MaxAuditText), Action: "run", Name: "n",
		Detail: strings.Repeat("x", cron.MaxAuditDetail)}
	c := e.Clip(now)
	assert.Equal(t, now, c.At)
	assert.LessOrEqual(t, len(c.Actor), cron.MaxAuditText)
	assert.True(t, utf8.ValidString(c.Actor))
	assert.True(t, strings.HasSuffix(c.Actor, "…"))
	assert.Equal(t, e.Detail, c.Detail, "at its bound: kept whole")
	assert.Equal(t, "run", c.Action)
	at := now.Add(-time.Hour)
	assert.Equal(t, at, cron.AuditEntry{At: at}.Clip(now).At, "a set At is kept")

	for limit, want := range map[int]int{-1: 100, 0: 100, 1: 1, 1000: 1000, 1001: cron.MaxAuditLimit} {
		assert.Equal(t, want, cron.AuditQuery{Limit: limit}.Max(), "Limit %d", limit)
	}
}

// TaskChanges names each field that differs, old → new, by its JSON
// name, and none that does not.
func TestTaskChanges(t *testing.T) {
	old := cron.Task{Name: "n", Handler: "h", Spec: "0 9 * * *", Calendars: []string{"fr"}, Created: time.Unix(1, 0)}
	t2 := old
	t2.Spec, t2.Jitter, t2.Calendars, t2.Created = "0 10 * * *", cron.Duration(30*time.Second), nil, time.Unix(2, 0)
	assert.Equal(t, `spec: "0 9 * * *" → "0 10 * * *"; calendars: fr → none; jitter: 0s → 30s`, cron.TaskChanges(old, t2))
	assert.Equal(t, "no field changed", cron.TaskChanges(old, old))
}
