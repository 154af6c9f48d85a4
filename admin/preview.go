package admin

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// previewRuns is the number of next runs a preview shows.
const previewRuns = 5

// A preview is what the server says of a spec as it is typed: whether a
// task may have it, in words, and its next runs in its zone. It is what
// api/preview returns.
type preview struct {
	Spec        string      `json:"spec"`
	Zone        string      `json:"zone"` // the zone it runs in: its CRON_TZ, the zone given, or the page's Location
	Description string      `json:"description,omitempty"`
	Next        []time.Time `json:"next"`
	NextText    []string    `json:"nextText"` // Next as the page shows it: "2026-03-02 09:00:00 CET"
	Error       string      `json:"error,omitempty"`
	Field       string      `json:"field,omitempty"` // "spec", "zone" or "calendars", with Error
}

// previewOf checks spec, in zone (empty: the page's Location), as a
// definition's, and returns its preview: its next runs pass over the days
// of the calendars cals, which Options.Calendars must hold.
func (h *handler) previewOf(ctx context.Context, spec, zone string, cals []string) *preview {
	loc := zoneOf(spec, zone, h.o.Location)
	p := &preview{Spec: spec, Zone: loc.String(), Next: []time.Time{}, NextText: []string{}}
	// Validate refuses what Apply would: a spec that does not parse, an
	// unknown zone, a spec with no time to run at in a hundred years.
	t := cron.Task{Name: "preview", Handler: "preview", Spec: spec, Zone: zone, Permanent: true, Calendars: cals}
	if err := t.Validate(); err != nil {
		p.Error, p.Field = err.Error(), "spec"
		var te *cron.TaskError
		if errors.As(err, &te) {
			p.Error, p.Field = te.Err.Error(), te.Field // not of the task "preview"
		}
		return p
	}
	p.Description = h.describe(spec, loc)
	s, err := cron.Parse(spec, loc) // a CRON_TZ of spec is loc already
	if err != nil {                 // Validate parsed it
		p.Error, p.Field = err.Error(), "spec"
		return p
	}
	if s, err = h.excluding(ctx, s, cals, loc); err != nil {
		var te *cron.TaskError
		errors.As(err, &te)
		p.Error, p.Field = te.Err.Error(), te.Field
		return p
	}
	for _, t := range schedule.Upcoming(s, time.Now(), previewRuns) {
		p.Next = append(p.Next, t.In(loc))
		p.NextText = append(p.NextText, local(t.In(loc)))
	}
	return p
}

// preview serves api/preview: the preview of spec= in zone=, passing over
// the days of calendars= (names separated by commas), with status 422 if
// a task may not have them.
func (h *handler) preview(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := h.previewOf(r.Context(), q.Get("spec"), q.Get("zone"), splitNames(q.Get("calendars")))
	status := http.StatusOK
	if p.Error != "" {
		status = http.StatusUnprocessableEntity
	}
	writeJSON(w, status, p)
}
