package ingest

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// DeadEntry is an ingest entry that could not be published: the entry's
// event field as it was, and the error the HTTP route would have answered.
type DeadEntry struct {
	Partition int    `json:"partition"`
	EntryID   string `json:"entryId"`
	Event     string `json:"event"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	At        string `json:"at"`
}

// DeadCursor is where a listing of dead entries goes on: after entry ID of
// partition P. Its text form is "<partition>:<entry id>".
type DeadCursor struct {
	P  int
	ID string
}

// String is the cursor's text form.
func (c DeadCursor) String() string { return strconv.Itoa(c.P) + ":" + c.ID }

// ParseDeadCursor reads a cursor's text form.
func ParseDeadCursor(s string) (DeadCursor, error) {
	ps, id, ok := strings.Cut(s, ":")
	p, err := strconv.Atoi(ps)
	if !ok || err != nil || p < 0 {
		return DeadCursor{}, fmt.Errorf("%w: after must be a cursor from nextAfter", hub.ErrInvalid)
	}
	ms, seq, ok := strings.Cut(id, "-")
	if _, err := strconv.ParseUint(ms, 10, 64); !ok || err != nil {
		return DeadCursor{}, fmt.Errorf("%w: after must be a cursor from nextAfter", hub.ErrInvalid)
	}
	if _, err := strconv.ParseUint(seq, 10, 64); err != nil {
		return DeadCursor{}, fmt.Errorf("%w: after must be a cursor from nextAfter", hub.ErrInvalid)
	}
	return DeadCursor{P: p, ID: id}, nil
}

// Dead lists dead entries in partition order, each partition's in entry
// order: of partition (or of every partition when partition < 0), after
// the cursor (nil: from the start), at most limit. next is nil on the last
// page.
func (in *Ingest) Dead(ctx context.Context, partition int, after *DeadCursor, limit int) (entries []DeadEntry, next *DeadCursor, err error) {
	n := in.cfg.Partitions
	if partition >= n {
		return nil, nil, fmt.Errorf("%w: partition must be 0 to INGEST_PARTITIONS-1 (%d)", hub.ErrInvalid, n-1)
	}
	first, last := 0, n-1
	if partition >= 0 {
		first, last = partition, partition
	}
	start := "-"
	if after != nil {
		if after.P < first || after.P > last {
			return nil, nil, fmt.Errorf("%w: after is a cursor of another listing", hub.ErrInvalid)
		}
		first, start = after.P, "("+after.ID
	}
	entries = []DeadEntry{}
	for p := first; p <= last && len(entries) <= limit; p++ {
		got, err := hub.Call(in.rdb, ctx, in.rdb.B().Xrange().Key(DeadKey(p)).Start(start).End("+").
			Count(int64(limit+1-len(entries))).Build(), rueidis.RedisResult.AsXRange)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range got {
			f := e.FieldValues
			entries = append(entries, DeadEntry{Partition: p, EntryID: e.ID, Event: f["entry"], Code: f["code"], Message: f["message"], At: f["at"]})
		}
		start = "-"
	}
	if len(entries) > limit {
		entries = entries[:limit]
		l := entries[limit-1]
		next = &DeadCursor{P: l.Partition, ID: l.EntryID}
	}
	return entries, next, nil
}

// DeadCount counts the dead entries of every partition.
func (in *Ingest) DeadCount(ctx context.Context) (int64, error) {
	cmds := make(rueidis.Commands, in.cfg.Partitions)
	for p := range cmds {
		cmds[p] = in.rdb.B().Xlen().Key(DeadKey(p)).Build()
	}
	return hub.SumMany(in.rdb, ctx, cmds)
}
