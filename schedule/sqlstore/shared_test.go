package sqlstore_test

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
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

// Release of a slot already finished returns ErrLeaseLost, and leaves it
// finished: a finished slot is never taken over and run again. (Release
// was once the Finish statement, which matched (node, attempt) whatever
// the status.)
func TestReleaseOfAFinishedSlot(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		sa := newStore(t, b, dsn)
		sb := newStore(t, b, dsn)
		done := running("done", 0, "a")
		_, err := sa.ClaimRun(ctx, done, schedule.Concurrency{Max: 1})
		require.NoError(t, err)
		done.Status, done.End, done.Attempt = schedule.Succeeded, time.Now(), 1
		require.NoError(t, sa.Finish(ctx, done))
		assert.ErrorIs(t, sa.Release(ctx, done), schedule.ErrLeaseLost, "Release of a Succeeded slot")
		if r, err := sb.Reclaim(ctx, "done", "b", schedule.Concurrency{Max: 1}); err == nil {
			t.Errorf("a Succeeded slot was taken over to run again: %+v", r)
		}
	})
}

// A run asked to end (OverlapReplace) whose lease expired is recorded
// Canceled by the next Reclaim, which takes nothing and answers
// ErrNoRecord; Expired lists the job no more. (On PostgreSQL the
// transaction's rollback once undid the Canceled when there was nothing
// else to take over: the record stayed Running for good.)
func TestReclaimClosesAnAskedExpiredClaim(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		reclaimAskedExpired(t, b, schedule.Concurrency{Max: 1})
	})
}

// The same, for a Reclaim without a limit (OverlapAllow).
func TestReclaimClosesAnAskedExpiredClaimWithoutLimit(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		reclaimAskedExpired(t, b, schedule.Concurrency{})
	})
}

// reclaimAskedExpired claims a slot on one Store, asks it to end with a
// claim under Replace on another, lets its lease expire, and checks what
// a Reclaim with c does.
func reclaimAskedExpired(t *testing.T, b backend, c schedule.Concurrency) {
	withLease(t, 200*time.Millisecond, func(lease time.Duration) bool {
		dsn := b.dsn(t)
		sa := newStore(t, b, dsn, sqlstore.WithLease(lease))
		sb := newStore(t, b, dsn, sqlstore.WithLease(lease))
		replace := schedule.Concurrency{Max: 1, Replace: true}
		claimed := time.Now()
		_, err := sa.ClaimRun(ctx, running("j", 1, "a"), replace)
		if !within(t, err) {
			return false
		}
		_, err = sb.ClaimRun(ctx, running("j", 2, "b"), replace)
		if time.Since(claimed) >= lease || outlived(err) {
			return false // a's lease may have expired before b asked
		}
		require.ErrorIs(t, err, schedule.ErrBusy)
		time.Sleep(lease + 50*time.Millisecond) // a's lease expires, its run asked to end
		_, err = sb.Reclaim(ctx, "j", "b", c)
		if outlived(err) {
			return false
		}
		assert.ErrorIs(t, err, schedule.ErrNoRecord, "nothing is in flight and nothing is to take over")
		h, err := sb.History(ctx, "j", 1)
		require.NoError(t, err)
		assert.Equal(t, schedule.Canceled, h[0].Status, "the asked run whose lease expired is closed Canceled")
		assert.Contains(t, h[0].Err, "replaced")
		names, err := sb.Expired(ctx, 10)
		require.NoError(t, err)
		assert.Empty(t, names, "the job has nothing left to take over")
		return true
	})
}

// tagProxy is lostReplyProxy, cutting the reply that completes a statement
// whose command tag is tag.
type tagProxy struct {
	l     net.Listener
	tag   []byte
	armed atomic.Bool
	cut   atomic.Int32
	wg    sync.WaitGroup
}

func newTagProxy(t *testing.T, target, tag string) *tagProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &tagProxy{l: l, tag: []byte(tag + "\x00")}
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

func (p *tagProxy) replies(c, s net.Conn) {
	buf := make([]byte, 64<<10)
	var held []byte
	for {
		n, err := s.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if p.armed.Load() && (held != nil || bytes.Contains(chunk, p.tag)) {
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

// An unsure claim (a ClaimRun whose reply was lost after its commit) is
// adopted only while its lease lasts: once it has expired, another node
// may have claimed another slot of the job, and reviving it would put two
// runs of a job under Concurrency{Max: 1} in flight at once.
func TestAdoptOnlyALiveClaim(t *testing.T) {
	needPostgres(t)
	if pg.server == nil {
		t.Skip("PostgreSQL is not the tests' own (SQLSTORE_PG_DSN)")
	}
	b := backends()[1]
	b.dsn(t)
	const lease = 300 * time.Millisecond
	proxy := newTagProxy(t, fmt.Sprintf("127.0.0.1:%d", pg.server.Port()), "SELECT 1")
	viaProxy := fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", proxy.l.Addr().String())
	sa := newStore(t, b, viaProxy, sqlstore.WithLease(lease))
	sb := newStore(t, b, pg.dsn, sqlstore.WithLease(lease))
	one := schedule.Concurrency{Max: 1}

	proxy.armed.Store(true)
	_, err := sa.ClaimRun(ctx, running("j", 1, "a"), one)
	require.Error(t, err, "the reply was lost")
	require.EqualValues(t, 1, proxy.cut.Load())
	h, err := sb.History(ctx, "j", 1)
	require.NoError(t, err)
	require.Len(t, h, 1, "the claim committed")

	time.Sleep(lease + 50*time.Millisecond) // node a is cut off for a lease
	_, err = sb.ClaimRun(ctx, running("j", 2, "b"), one)
	require.NoError(t, err, "b claims the next slot: a's claim has expired")
	// a's Job tries its claim again (begin retries a failed claim).
	_, err = sa.ClaimRun(ctx, running("j", 1, "a"), one)
	if err == nil {
		h, _ = sb.History(ctx, "j", 10)
		t.Errorf("slot 1 adopted with a fresh lease while slot 2 runs on b: two runs in flight under Max 1: %+v", h)
	}
}

// A Concurrency.Max beyond 32 bits (WithMaxParallel(math.MaxInt), as "no
// practical limit") claims and takes over on both dialects: it was read as
// a 32-bit integer on PostgreSQL, and every claim failed.
func TestHugeMaxParallel(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		const lease = 200 * time.Millisecond
		dsn := b.dsn(t)
		s := newStore(t, b, dsn, sqlstore.WithLease(lease))
		huge := schedule.Concurrency{Max: math.MaxInt}
		_, err := s.ClaimRun(ctx, running("j", 1, "a"), huge)
		assert.NoError(t, err, "ClaimRun with Max %d", huge.Max)
		dead := newStore(t, b, dsn, sqlstore.WithLease(lease))
		_, err = dead.ClaimRun(ctx, running("k", 1, "dead"), schedule.Concurrency{})
		require.NoError(t, err)
		time.Sleep(lease + 50*time.Millisecond)
		_, err = s.Reclaim(ctx, "k", "a", huge)
		assert.NoError(t, err, "Reclaim with Max %d", huge.Max)
	})
}

// A Store on a PostgreSQL whose transactions run at repeatable read (a
// common hardening) is refused by New, naming the level: its claims count a
// job's runs in flight in a statement of their own, whose snapshot must be
// taken after the job's lock, which only read committed does. Under
// repeatable read two replicas both claimed a slot of a job under Max 1.
func TestNewRefusesRepeatableRead(t *testing.T) {
	needPostgres(t)
	b := backends()[1]
	dsn := b.dsn(t) + "&default_transaction_isolation=repeatable%20read"
	db := openDB(t, "pgx", dsn)
	_, err := sqlstore.New(ctx, db, sqlstore.PostgreSQL, sqlstore.WithTable(tableFor(t)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `isolation level "repeatable read"`)
}

// Claims of one job, each of another slot, made at once by many Stores
// under Concurrency{Max: 1}: exactly one wins each round, on both
// dialects. On PostgreSQL the claims lock the job's row first; without the
// lock (the mutant), claims that start together each count none in flight.
func TestClaimRunCountsUnderRaces(t *testing.T) {
	for _, max := range []int{1, 2} {
		t.Run(fmt.Sprint("max=", max), func(t *testing.T) {
			eachBackend(t, func(t *testing.T, b backend) {
				if over := racingClaims(t, b, b.dsn(t), max); over != 0 {
					t.Errorf("%d rounds of 30 had more than %d claims won", over, max)
				}
			})
			t.Run("mutant", func(t *testing.T) {
				needPostgres(t)
				restore := sqlstore.SetMutant(sqlstore.Mutants["claims without a lock"])
				defer restore()
				b := backends()[1]
				over := racingClaims(t, b, b.dsn(t), max)
				t.Logf("without a lock, %d rounds of 30 had more than %d claims won", over, max)
				if over == 0 {
					t.Errorf("without a lock, no round had more than %d claims won: the test proves nothing", max)
				}
			})
		})
	}
}

// racingClaims makes 30 rounds of six Stores claiming six slots of a new job
// at once under Max max, and returns the rounds where more than max won.
func racingClaims(t *testing.T, b backend, dsn string, max int) int {
	var stores []*sqlstore.Store
	for range 6 {
		stores = append(stores, newStore(t, b, dsn, sqlstore.WithLease(time.Minute)))
	}
	bad := 0
	for round := range 30 {
		job := fmt.Sprint("race", round)
		// A first run, ended, makes the job's row of {t}_jobs, which
		// claims of a new job would otherwise wait on as they insert it.
		first := schedule.Record{Job: job, Due: slot(-1), Status: schedule.Running, Start: time.Now(), Node: "first", Attempt: 1}
		_, err := stores[0].ClaimRun(ctx, first, schedule.Concurrency{Max: max})
		require.NoError(t, err)
		first.Status, first.End = schedule.Succeeded, time.Now()
		require.NoError(t, stores[0].Finish(ctx, first))
		switch n := raceStores(t, stores, func(i int, s *sqlstore.Store) error {
			r := schedule.Record{Job: job, Due: slot(i), Status: schedule.Running, Start: time.Now(), Node: fmt.Sprint(i), Attempt: 1}
			_, err := s.ClaimRun(ctx, r, schedule.Concurrency{Max: max})
			return err
		}, schedule.ErrBusy); {
		case n > int32(max):
			bad++
		case n == 0:
			t.Errorf("round %d: no claim won", round)
		}
	}
	return bad
}

// ClaimRun of a slot that pruning passed returns ErrClaimed, as Claim does,
// not ErrBusy: a Job would otherwise wait for a free job to run a slot long
// decided (BufferOne, Replace), or owe it for good (a catch-up).
func TestClaimRunOfAPrunedSlot(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t), sqlstore.WithHistory(1, 0), sqlstore.WithRetention(0))
		for i := range 5 {
			r := running("j", i, "a")
			r.Status = schedule.Succeeded
			require.NoError(t, s.Claim(ctx, r))
		}
		_, err := s.Prune(ctx, "j")
		require.NoError(t, err)
		require.ErrorIs(t, s.Claim(ctx, running("j", 1, "late")), schedule.ErrClaimed, "Claim: pruned")
		_, err = s.ClaimRun(ctx, running("j", 1, "late"), schedule.Concurrency{Max: 1})
		assert.ErrorIs(t, err, schedule.ErrClaimed, "ClaimRun under Max 1 of a pruned slot, no run in flight")
	})
}

// A replica still on schema version 2 goes on working beside upgraded ones
// without losing what they hand over: its pruning (the statements of
// version 2, run here as it sends them) ranks every status but 0 as
// finished, and a released run is a running record (status 0) that
// version 3 reads as Released. Stored as status 6, it was deleted, and
// its slot lost, during the very rolling upgrade that hands runs over.
func TestVersion2PruningKeepsReleased(t *testing.T) {
	needPostgres(t)
	b := backends()[1]
	dsn := b.dsn(t)
	s := newStore(t, b, dsn, sqlstore.WithLease(time.Minute))
	tb := tableFor(t)
	r := running("j", 1, "a")
	r.Attempt = 1
	_, err := s.ClaimRun(ctx, r, schedule.Concurrency{Max: 1})
	require.NoError(t, err)
	r.Status, r.End = schedule.Released, time.Now()
	require.NoError(t, s.Release(ctx, r)) // a v3 replica shuts down mid-run
	// Slots after it that the busy job skipped, noted by the replicas.
	var notes []schedule.Record
	for i := 2; i <= 4; i++ {
		notes = append(notes, schedule.Record{Job: "j", Due: slot(i), Status: schedule.Skipped, Err: "busy"})
	}
	require.NoError(t, s.Note(ctx, notes))

	// A version-2 replica prunes "j" with the default WithHistory(3, 1).
	db := openDB(t, "pgx", dsn)
	ranked := `SELECT due, status, ROW_NUMBER() OVER (
	PARTITION BY CASE WHEN status = 1 THEN 1 ELSE 0 END ORDER BY due DESC) AS rn
FROM ` + tb + ` WHERE job = $1 AND status <> 0`
	doomed := `SELECT due FROM (` + ranked + `) r WHERE ((status = 1 AND rn > $2) OR (status <> 1 AND rn > $3))
	AND due < (SELECT MAX(due) FROM ` + tb + ` WHERE job = $1)`
	var mark sql.NullInt64
	require.NoError(t, db.QueryRow(`SELECT MAX(due) FROM (`+doomed+`) d`, "j", 3, 1).Scan(&mark))
	require.True(t, mark.Valid)
	_, err = db.Exec(`INSERT INTO `+tb+`_jobs (job, pruned_until) VALUES ($1, $2)
ON CONFLICT (job) DO UPDATE SET pruned_until = CASE
	WHEN excluded.pruned_until > `+tb+`_jobs.pruned_until THEN excluded.pruned_until
	ELSE `+tb+`_jobs.pruned_until END`, "j", mark.Int64)
	require.NoError(t, err)
	_, err = db.Exec(`DELETE FROM `+tb+` WHERE job = $1 AND status <> 0 AND due <= $4 AND due IN (`+doomed+`)`,
		"j", 3, 1, mark.Int64)
	require.NoError(t, err)

	got, err := s.Reclaim(ctx, "j", "b", schedule.Concurrency{Max: 1})
	assert.NoError(t, err, "the Released slot is still there to take over")
	assert.True(t, got.Due.Equal(slot(1)))
}

// raceStores calls f with each of stores at once, released together, and returns
// how many calls succeeded; an error other than those of lost fails t.
func raceStores(t *testing.T, stores []*sqlstore.Store, f func(i int, s *sqlstore.Store) error, lost ...error) int32 {
	var won atomic.Int32
	var start, wg sync.WaitGroup
	start.Add(1)
	for i, s := range stores {
		wg.Go(func() {
			start.Wait()
			err := f(i, s)
			if err == nil {
				won.Add(1)
				return
			}
			for _, l := range lost {
				if errors.Is(err, l) {
					return
				}
			}
			t.Errorf("store %d: %v", i, err)
		})
	}
	start.Done()
	wg.Wait()
	return won.Load()
}
