package sqlstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// A lostReplyProxy forwards connections to PostgreSQL, and, once armed,
// cuts the connection that carries the reply to a committed one-row
// INSERT before the client reads it: the claim is in the table, and the
// client gets an error, as when a connection breaks at the worst moment.
type lostReplyProxy struct {
	l     net.Listener
	armed atomic.Bool
	cut   atomic.Int32
	wg    sync.WaitGroup
}

func newLostReplyProxy(t *testing.T, target string) *lostReplyProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &lostReplyProxy{l: l}
	var conns sync.Map
	p.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			conns.Store(c, s)
			p.wg.Go(func() { _, _ = io.Copy(s, c); s.Close() })
			p.wg.Go(func() { p.replies(c, s); c.Close() })
		}
	})
	t.Cleanup(func() {
		l.Close()
		conns.Range(func(c, s any) bool { c.(net.Conn).Close(); s.(net.Conn).Close(); return true })
		p.wg.Wait()
	})
	return p
}

func (p *lostReplyProxy) addr() string { return p.l.Addr().String() }

// replies copies the server's messages to the client; armed, it drops a
// chunk that completes an "INSERT 0 1" up to ReadyForQuery, and closes.
func (p *lostReplyProxy) replies(c, s net.Conn) {
	buf := make([]byte, 64<<10)
	var held []byte // an armed reply not yet complete
	for {
		n, err := s.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if p.armed.Load() && (held != nil || bytes.Contains(chunk, []byte("INSERT 0 1\x00"))) {
				held = append(held, chunk...)
				if bytes.HasSuffix(held, []byte("Z\x00\x00\x00\x05I")) && p.armed.CompareAndSwap(true, false) {
					p.cut.Add(1)
					s.Close()
					return
				}
				continue
			}
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestClaimLostReply: a claim that committed but whose reply was lost
// returns an error, and its caller does not run the slot. The next Claim
// of that slot through the same Store, a catch-up or another Job on it,
// adopts the claim instead of leaving the slot to wait a lease for a
// takeover. Another Store does not.
func TestClaimLostReply(t *testing.T) {
	needPostgres(t)
	if pg.server == nil {
		t.Skip("PostgreSQL is not the tests' own (SQLSTORE_PG_DSN)")
	}
	b := backends()[1]
	b.dsn(t) // a fresh table
	proxy := newLostReplyProxy(t, fmt.Sprintf("127.0.0.1:%d", pg.server.Port()))
	viaProxy := fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", proxy.addr())
	s := newStore(t, b, viaProxy, sqlstore.WithLease(time.Minute))
	other := newStore(t, b, pg.dsn, sqlstore.WithLease(time.Minute))

	for i, adopter := range []*sqlstore.Store{s, other} {
		proxy.armed.Store(true)
		err := s.Claim(ctx, running("j", i, "a"))
		require.Error(t, err, "the reply was lost")
		require.False(t, errors.Is(err, schedule.ErrClaimed))
		require.EqualValues(t, i+1, proxy.cut.Load(), "the proxy cut the reply")
		h, err := other.History(ctx, "j", 1)
		require.NoError(t, err)
		require.Len(t, h, 1)
		require.Equal(t, "a", h[0].Node, "the claim committed")

		r := running("j", i, "b")
		r.Reason = schedule.CatchUp
		if adopter == other {
			require.ErrorIs(t, other.Claim(ctx, r), schedule.ErrClaimed, "another Store does not adopt the claim")
			continue
		}
		require.NoError(t, s.Claim(ctx, r), "the next Claim through the Store adopts the claim")
		h, err = other.History(ctx, "j", 1)
		require.NoError(t, err)
		assert.Equal(t, "b", h[0].Node)
		assert.Equal(t, schedule.CatchUp, h[0].Reason)
		assert.Equal(t, schedule.Running, h[0].Status)
		assert.Equal(t, 1, h[0].Attempt)
		require.ErrorIs(t, s.Claim(ctx, running("j", i, "c")), schedule.ErrClaimed, "adopted once")
		r.Status = schedule.Succeeded
		require.NoError(t, s.Finish(ctx, r), "the adopter owns the claim")
	}
}
