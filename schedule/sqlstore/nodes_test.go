package sqlstore_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// Rendezvous hashing gives each of n nodes its share of the jobs, within
// a few percent for 30,000 names, and a node that comes or goes moves
// only its own share: no job moves between two nodes that stay.
func TestOwnersByRendezvous(t *testing.T) {
	const jobs = 30000
	nodes := []string{"web-1", "web-2", "web-3"}
	owners := make([]string, jobs)
	share := map[string]int{}
	for i := range jobs {
		owners[i] = sqlstore.OwnerOf(fmt.Sprint("task-", i), nodes)
		share[owners[i]]++
	}
	for _, n := range nodes {
		assert.InDelta(t, 1.0/3, float64(share[n])/jobs, 0.02, "%s's share: %v", n, share)
	}

	joined := append(nodes[:3:3], "web-4")
	moved := 0
	for i := range jobs {
		o := sqlstore.OwnerOf(fmt.Sprint("task-", i), joined)
		if o != owners[i] {
			require.Equal(t, "web-4", o, "a job moved between two nodes that stayed")
			moved++
		}
	}
	assert.InDelta(t, 0.25, float64(moved)/jobs, 0.02, "the share a fourth node takes")

	left := []string{"web-1", "web-3"}
	for i := range jobs {
		o := sqlstore.OwnerOf(fmt.Sprint("task-", i), left)
		if owners[i] != "web-2" {
			require.Equal(t, owners[i], o, "a job of a node that stayed moved")
		}
	}
	assert.Equal(t, "", sqlstore.OwnerOf("x", nil))
	assert.Equal(t, "a", sqlstore.OwnerOf("x", []string{"a"}))
	// Names that differ in a byte weigh unrelated amounts: no node owns
	// a run of similar names.
	run, longest := 0, 0
	for i := range 1000 {
		if sqlstore.OwnerOf(fmt.Sprint("t", i), nodes) == sqlstore.OwnerOf(fmt.Sprint("t", i+1), nodes) {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	assert.Less(t, longest, int(math.Log2(1000))+4)
}

// A node claims at once the slots of the jobs it owns, and those of an
// owner at its run limit, unless it is at its own: in a herd that fills
// every node's limit, each keeps to its share rather than race the others
// for theirs. A Store that knows no nodes claims every slot at once.
func TestOwnsWhenFull(t *testing.T) {
	nodes := []string{"a", "b", "c"}
	for i := range 300 {
		job := fmt.Sprint("j", i)
		owner := sqlstore.OwnerOf(job, nodes)
		for _, n := range nodes {
			mine := n == owner
			assert.Equal(t, mine, sqlstore.Owns(job, n, nodes), "%s on %s, none full", job, n)
			assert.Equal(t, true, sqlstore.Owns(job, n, nodes, owner), "%s on %s, its owner full", job, n)
			assert.Equal(t, mine, sqlstore.Owns(job, n, nodes, nodes...), "%s on %s, all full", job, n)
			assert.Equal(t, mine, sqlstore.Owns(job, n, nodes, n), "%s on %s, only %s full", job, n, n)
		}
	}
	assert.True(t, sqlstore.Owns("j", "a", nil), "no nodes known")
}

// Each Store that sends heartbeats is a node: Nodes lists it with its
// runs in flight and limit, live while its heartbeat is less than a lease
// old; the Stores agree on each job's owner among the live ones, and a
// node gone moves its share to the others.
func TestNodes(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		withLease(t, 200*time.Millisecond, func(lease time.Duration) bool {
			dsn := b.dsn(t)
			a := newStore(t, b, dsn, sqlstore.WithLease(lease), sqlstore.WithNode("a"), sqlstore.WithRunLimit(7))
			c := newStore(t, b, dsn, sqlstore.WithLease(lease), sqlstore.WithNode("c"))
			assert.Equal(t, "a", a.Node())
			assert.True(t, a.Owns("j"), "a Store that knows no nodes claims at once")
			assert.Equal(t, "", a.Owner("j"))

			begin := time.Now()
			require.NoError(t, a.Heartbeat(ctx))
			require.NoError(t, c.Heartbeat(ctx))
			require.NoError(t, a.Heartbeat(ctx))
			nodes, err := a.Nodes(ctx)
			require.NoError(t, err)
			if time.Since(begin) >= lease {
				return false
			}
			require.Len(t, nodes, 2)
			assert.Equal(t, "a", nodes[0].Name)
			assert.Equal(t, 7, nodes[0].RunLimit)
			assert.Equal(t, sqlstore.DefaultRunLimit, nodes[1].RunLimit)
			assert.True(t, nodes[0].Live && nodes[1].Live)
			assert.Equal(t, "devel", nodes[0].Version)
			assert.False(t, nodes[0].Heartbeat.Before(nodes[0].Started))
			assert.Equal(t, []string{"a", "c"}, a.Sharing())
			assert.Equal(t, []string{"a", "c"}, c.Sharing())

			owned := 0
			for i := range 100 {
				job := fmt.Sprint("j", i)
				want := sqlstore.OwnerOf(job, []string{"a", "c"})
				assert.Equal(t, want, a.Owner(job))
				assert.Equal(t, want == "a", a.Owns(job))
				if want == "a" {
					owned++
				}
			}
			assert.Greater(t, owned, 20)
			assert.Less(t, owned, 80)

			time.Sleep(lease) // c is gone, and a's view is stale
			for i := range 100 {
				assert.True(t, a.Owns(fmt.Sprint("j", i)), "a view a lease old is no view")
			}
			require.NoError(t, a.Heartbeat(ctx))
			assert.Equal(t, []string{"a"}, a.Sharing())
			nodes, err = a.Nodes(ctx)
			require.NoError(t, err)
			require.Len(t, nodes, 2)
			assert.True(t, nodes[0].Live)
			assert.Equal(t, "c", nodes[1].Name)
			assert.False(t, nodes[1].Live)
			return true
		})
	})
}

// Claimed reports which slots have a record, in one statement for
// thousands: claimed, finished, noted, or none; a record it cannot hold
// reads as unclaimed.
func TestClaimed(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t))
		require.NoError(t, s.Claim(ctx, running("a", 1, "n")))
		fin := running("b", 2, "n")
		fin.Status, fin.End = schedule.Succeeded, fin.Start.Add(time.Millisecond)
		require.NoError(t, s.Finish(ctx, fin))
		noted := schedule.Record{Job: "c", Due: slot(3), Status: schedule.Missed}
		require.NoError(t, s.Note(ctx, []schedule.Record{noted}))
		var rs []schedule.Record
		want := []bool{}
		for i := range 12000 {
			rs = append(rs, schedule.Record{Job: fmt.Sprint("x", i), Due: slot(i)})
			want = append(want, false)
		}
		rs = append(rs, schedule.Record{Job: "a", Due: slot(1)}, schedule.Record{Job: "b", Due: slot(2)},
			schedule.Record{Job: "c", Due: slot(3)}, schedule.Record{Job: "a", Due: slot(2)},
			schedule.Record{Job: "", Due: slot(1)}, schedule.Record{Job: "a", Due: slot(1)})
		want = append(want, true, true, true, false, false, true)
		before := s.Stats().Statements
		got, err := s.Claimed(ctx, rs)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		assert.Equal(t, uint64(3), s.Stats().Statements-before, "one statement for 5,000 slots")
	})
}
