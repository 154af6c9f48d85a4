package main

import (
	"strconv"
	"time"
)

const nodesUsage = "circulation nodes"

// nodes writes the nodes that ran jobs on the tables in the last day,
// live ones first (sqlstore.Store.Nodes).
func (c *cli) nodes(args []string) error {
	fs := c.flags("nodes")
	if _, err := c.parse(fs, nodesUsage, args, 0, 0); err != nil {
		return err
	}
	s, done, err := c.store()
	if err != nil {
		return err
	}
	defer done()
	nodes, err := s.Nodes(c.ctx)
	if err != nil {
		return err
	}
	if c.json {
		type node struct {
			Name      string    `json:"name"`
			Live      bool      `json:"live"`
			Started   time.Time `json:"started"`
			Heartbeat time.Time `json:"heartbeat"`
			Running   int       `json:"running"`
			RunLimit  int       `json:"runLimit"`
			Version   string    `json:"version"`
		}
		out := make([]node, len(nodes))
		for i, n := range nodes {
			out[i] = node{n.Name, n.Live, n.Started.UTC(), n.Heartbeat.UTC(), n.Running, n.RunLimit, n.Version}
		}
		return c.writeJSON(out)
	}
	t := c.newTable("NODE", "LIVE", "RUNNING", "RUN LIMIT", "STARTED", "HEARTBEAT", "VERSION")
	for _, n := range nodes {
		t.row(n.Name, yesNo(n.Live), strconv.Itoa(n.Running), strconv.Itoa(n.RunLimit),
			when(n.Started, time.Local), when(n.Heartbeat, time.Local), n.Version)
	}
	return t.flush()
}
