package sqlstore_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// The audit log's writes and reads are reported to the statement hook, as
// "audit".
func TestAuditStatementsReachTheHook(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		var st statements
		s := newStore(t, b, b.dsn(t), sqlstore.WithStatementHook(st.hook))
		st.take(t)
		require.NoError(t, s.Definitions().Audit(ctx, cron.AuditEntry{Actor: "a", Action: "run", Kind: "job", Name: "j"}))
		_, err := s.Definitions().AuditLog(ctx, cron.AuditQuery{})
		require.NoError(t, err)
		assert.Equal(t, []string{"audit 1", "audit 1"}, st.take(t))
	})
}

// Audit text that is not UTF-8, or holds a NUL, is kept on both databases,
// made valid.
func TestAuditTextNotUTF8(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		defs := newStore(t, b, b.dsn(t)).Definitions()
		for _, actor := range []string{"b\xffb", "nul\x00"} {
			assert.NoError(t, defs.Audit(ctx, cron.AuditEntry{Actor: actor, Action: "run", Kind: "job", Name: "j"}), "%q", actor)
		}
	})
}

// A Before past 2^31-1 reads the log on PostgreSQL too.
func TestAuditBeforeBeyondInt32(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		defs := newStore(t, b, b.dsn(t)).Definitions()
		require.NoError(t, defs.Audit(ctx, cron.AuditEntry{Actor: "a", Action: "run", Kind: "job", Name: "j"}))
		for _, q := range []cron.AuditQuery{{Before: 1 << 40}, {Name: "j", Before: 1 << 40}} {
			es, err := defs.AuditLog(ctx, q)
			if assert.NoError(t, err) {
				assert.Len(t, es, 1)
			}
		}
	})
}
