package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/circulation-go/circulation/schedule"
)

// claimedSQL returns the slots of the JSON records in $1 that have a
// record: an index lookup of the primary key for each.
const claimedSQL = `SELECT b.j, b.d FROM {b} JOIN {t} ON {t}.job = b.j AND {t}.due = b.d`

// claimedChunk bounds the slots Claimed asks about in one statement.
const claimedChunk = 5000

// Claimed reports, for each of rs, whether its slot (Job, Due) has a
// record already (schedule.Sharer): a node hands the slots of the jobs it
// does not own to their owners, and asks, when the hand-off is over,
// which of them are still unclaimed, in one statement for thousands,
// rather than send a claim for each that would fail. A record that is
// not valid (an empty Job) reads as unclaimed.
func (s *Store) Claimed(ctx context.Context, rs []schedule.Record) ([]bool, error) {
	s.mustBeMade()
	out := make([]bool, len(rs))
	index := make(map[slotKey][]int, len(rs))
	for lo := 0; lo < len(rs); lo += claimedChunk {
		hi := min(lo+claimedChunk, len(rs))
		buf := []byte{'['}
		clear(index)
		for i, r := range rs[lo:hi] {
			w, err := toRow(r)
			if err != nil {
				continue
			}
			k := slotKey{job: w.job, due: w.due}
			if len(index[k]) == 0 {
				if len(buf) > 1 {
					buf = append(buf, ',')
				}
				buf = append(buf, `{"j":`...)
				buf = appendJSONString(buf, w.job)
				buf = append(buf, `,"d":`...)
				buf = strconv.AppendInt(buf, w.due, 10)
				buf = append(buf, '}')
			}
			index[k] = append(index[k], lo+i)
		}
		if len(index) == 0 {
			continue
		}
		buf = append(buf, ']')
		err := s.retryOp(ctx, hookClaimed, hi-lo, func() error {
			return s.query(ctx, s.bq.claimed, func(rows *sql.Rows) error {
				var k slotKey
				if err := rows.Scan(&k.job, &k.due); err != nil {
					return err
				}
				for _, i := range index[k] {
					out[i] = true
				}
				return nil
			}, string(buf))
		})
		if err != nil {
			return nil, fmt.Errorf("sqlstore: reading which slots are claimed: %w", err)
		}
	}
	return out, nil
}
