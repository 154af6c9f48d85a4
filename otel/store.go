package otelcirculation

import (
	"go.opentelemetry.io/otel/metric"

	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// Statement records an exchange of a sqlstore.Store with its database: its
// duration, by op and error (whether the database failed), and the calls
// it carried, by op. Give it to the Store with sqlstore.WithStatementHook.
func (t *Telemetry) Statement(st sqlstore.Statement) {
	op := keyOp.String(st.Op)
	t.store.Record(background, st.Took.Seconds(), metric.WithAttributes(op, keyError.Bool(st.Err != nil)))
	t.calls.Add(background, int64(st.Calls), metric.WithAttributes(op))
}
