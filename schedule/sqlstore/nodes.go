package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/debug"
	"time"
)

// A Node is a Store that runs jobs on a table, as the table's {t}_nodes
// lists it (Nodes).
type Node struct {
	Name      string    // the Store's WithNode, or a name of its own
	Started   time.Time // its first heartbeat since it was last gone, by the database's clock
	Heartbeat time.Time // its latest heartbeat, by the database's clock
	Running   int       // its runs in flight and waiting at its latest heartbeat
	RunLimit  int       // its WithRunLimit
	Version   string    // the version of this package it runs, as its build reports it
	Live      bool      // its heartbeat is less than a lease old: it owns its share of the jobs
}

// members is what a Store knew of the live nodes at its latest heartbeat.
type members struct {
	at    time.Time // when it was read, by this machine's monotonic clock
	nodes []member  // the live nodes, this one among them
}

type member struct {
	name string
	full bool // at its run limit at its heartbeat
}

// A Store is a node, named by WithNode, once its jobs have looked for
// claims to take over: the schedule package does so every quarter lease
// while the Store has jobs started (Expired). Each look sends its
// heartbeat, with its runs in flight, and reads the other nodes; a node
// whose heartbeat is a lease old is gone, and a Store whose own view is a
// lease old, having failed to read it since, knows no nodes. The nodes
// share the jobs (Owns).
const (
	// nodeGone is how long a node's row stays in {t}_nodes after its
	// last heartbeat, for Nodes to list, before a heartbeat deletes it.
	nodeGone = 24 * time.Hour
)

const (
	heartbeatSQL = `INSERT INTO {t}_nodes (node, started, heartbeat, running, run_limit, version)
VALUES ($1, {now}, {now}, $2, $3, $4)
ON CONFLICT (node) DO UPDATE SET
	started = CASE WHEN {t}_nodes.heartbeat < {now} - $5 THEN {now} ELSE {t}_nodes.started END,
	heartbeat = {now}, running = $2, run_limit = $3, version = $4`

	// nodesSQL lists the nodes, live first ($1: the lease in µs).
	nodesSQL = `SELECT node, started, heartbeat, running, run_limit, version,
	CASE WHEN heartbeat >= {now} - $1 THEN 1 ELSE 0 END AS live
FROM {t}_nodes ORDER BY live DESC, node`

	forgetNodesSQL = `DELETE FROM {t}_nodes WHERE heartbeat < {now} - $1`
)

// Node returns the name the Store has among the nodes (WithNode).
func (s *Store) Node() string {
	s.mustBeMade()
	return s.opts.node
}

// Nodes lists the nodes that ran jobs on the Store's table in the last 24
// hours, live ones first, each sorted by name. A Store is a node while it
// has jobs started (see Owns).
func (s *Store) Nodes(ctx context.Context) ([]Node, error) {
	s.mustBeMade()
	start := s.began()
	nodes, err := s.readNodes(ctx)
	s.done(hookNodes, 1, start, err)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading the nodes: %w", err)
	}
	return nodes, nil
}

// readNodes reads the rows of {t}_nodes, live ones first.
func (s *Store) readNodes(ctx context.Context) ([]Node, error) {
	var nodes []Node
	err := s.retry(ctx, func() error {
		nodes = nodes[:0]
		return s.query(ctx, s.q.nodes, func(rows *sql.Rows) error {
			var n Node
			var started, beat int64
			var live int
			if err := rows.Scan(&n.Name, &started, &beat, &n.Running, &n.RunLimit, &n.Version, &live); err != nil {
				return err
			}
			n.Started, n.Heartbeat, n.Live = time.UnixMicro(started).UTC(), time.UnixMicro(beat).UTC(), live == 1
			nodes = append(nodes, n)
			return nil
		}, s.opts.lease.Microseconds())
	})
	return nodes, err
}

// heartbeat sends the Store's heartbeat and reads the live nodes, which
// Owns then shares the jobs among. A failure leaves the view it had,
// which Owns stops trusting a lease after it was read.
func (s *Store) heartbeat(ctx context.Context) (err error) {
	defer func(start time.Time) { s.done(hookHeartbeat, 1, start, err) }(s.began())
	running := s.limit.Running() + s.limit.Waiting()
	if _, err := s.exec(ctx, s.q.heartbeat, s.opts.node, running, s.opts.runs, moduleVersion, s.opts.lease.Microseconds()); err != nil {
		return err
	}
	if s.beats.Add(1)%64 == 1 {
		if _, err := s.exec(ctx, s.q.forgetNodes, nodeGone.Microseconds()); err != nil {
			return err
		}
	}
	at := time.Now()
	nodes, err := s.readNodes(ctx)
	if err != nil {
		return err
	}
	var live []member
	for _, n := range nodes {
		if n.Live {
			live = append(live, member{name: n.Name, full: n.Running >= n.RunLimit})
		}
	}
	s.members.Store(&members{at: at, nodes: live})
	return nil
}

// view returns the live nodes the Store knows, or nil if it knows none:
// it has not sent a heartbeat, or its last view is a lease old.
func (s *Store) view() []member {
	m := s.members.Load()
	if m == nil || time.Since(m.at) >= s.opts.lease {
		return nil
	}
	return m.nodes
}

// Owns reports whether the Store is to claim the slots of job at once
// (schedule.Sharer): job's owner, of the live nodes, is this Store, or it
// was at its run limit at its heartbeat and this Store was not, or the
// Store knows no live nodes. Each job has one owner, chosen by rendezvous
// hashing of its name and the nodes' names, so that a node that comes or
// goes moves only its share of the jobs. The other nodes claim a slot
// only after a hand-off delay, if it is still unclaimed: two nodes that
// see different nodes for a while both claim at once, and the claim still
// runs each slot once. In a herd that fills every node's run limit, each
// node keeps to its own share.
func (s *Store) Owns(job string) bool {
	s.mustBeMade()
	if s.opts.race {
		return true
	}
	return owns(job, s.opts.node, s.view())
}

// owns reports whether node is to claim the slots of job at once among
// the live nodes of view (Owns): it owns job, or the owner was at its run
// limit and node was not, or view is empty.
func owns(job, node string, view []member) bool {
	owner, full := ownerOf(job, view)
	if owner == "" || owner == node {
		return true
	}
	if !full {
		return false
	}
	for _, m := range view {
		if m.name == node {
			return !m.full
		}
	}
	return true // not among them: it has not sent its heartbeat yet
}

// Sharing returns the names of the live nodes the Store shares its jobs
// with, itself among them, as it saw them at its latest heartbeat; nil if
// it knows none (it sent no heartbeat, or its view is a lease old). A node
// that comes or goes is seen within a quarter lease, at the next
// heartbeat.
func (s *Store) Sharing() []string {
	s.mustBeMade()
	var names []string
	for _, m := range s.view() {
		names = append(names, m.name)
	}
	return names
}

// Owner returns the name of the live node that owns job, as the Store
// last saw the nodes, or "" if it knows none.
func (s *Store) Owner(job string) string {
	s.mustBeMade()
	owner, _ := ownerOf(job, s.view())
	return owner
}

// ownerOf returns the node of nodes with the highest weight for job, and
// whether it is at its run limit.
func ownerOf(job string, nodes []member) (owner string, full bool) {
	var best uint64
	for _, n := range nodes {
		if w := weight(job, n.name); owner == "" || w > best || w == best && n.name < owner {
			owner, full, best = n.name, n.full, w
		}
	}
	return owner, full
}

// weight is the rendezvous weight of node for job: FNV-1a of both, each
// ended by a zero byte, through SplitMix64's finalizer, so that names
// that differ in one byte weigh unrelated amounts.
func weight(job, node string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(job); i++ {
		h = (h ^ uint64(job[i])) * prime
	}
	h *= prime
	for i := 0; i < len(node); i++ {
		h = (h ^ uint64(node[i])) * prime
	}
	h *= prime
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// moduleVersion is this package's module version, as the program's build
// reports it, or "devel".
var moduleVersion = func() string {
	v := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == modulePath {
				v = m.Version
				if m.Replace != nil {
					v = m.Replace.Version
				}
			}
		}
		if bi.Main.Path == modulePath {
			v = bi.Main.Version
		}
	}
	if v == "" || v == "(devel)" {
		return "devel"
	}
	return v
}()

const modulePath = "github.com/circulation-go/circulation/schedule/sqlstore"

// defaultNode names a Store without WithNode: the host's name, the
// process id and 4 random bytes, unique among the processes on a table.
func defaultNode() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
