package ingest

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// finish acknowledges, per partition, the entries that were published or
// are dead, in their order up to the first to be retried (the rest is read
// again, pending, so the partition keeps its order); keeps the dead ones;
// and counts them. On one Redis, when nothing is to be retried and hold
// allows it (the round's only finish), the call is held back (held) and
// goes first in the next read's pipeline: a round is then two round trips,
// the read and the publish.
func (in *Ingest) finish(ctx context.Context, parts []int, entries []Entry, from []int, outcomes []Outcome, hold bool) error {
	execs, counted, retried := in.finishCalls(parts, entries, from, outcomes)
	switch {
	case len(execs) == 0:
	case hold && !in.rdb.Sharded() && !retried:
		// Counted now: its reply comes with the next read's, which may wait.
		// Should it fail, its entries are read again and answered duplicate.
		in.held = &execs[0]
	default:
		for _, r := range hub.RunMany(in.rdb, ctx, doneScript, execs) {
			if err := r.Error(); err != nil {
				return hub.RedisErr(err) // published, not acknowledged: read again (pending) and answered duplicate
			}
		}
	}
	in.count(counted)
	if retried {
		return fmt.Errorf("%w: some entries could not be published and will be read again", hub.ErrRedis)
	}
	return nil
}

// sent takes the reply r of the held finish, sent as c: done, it is
// forgotten; else its error (it stays held and goes with the next read).
func (in *Ingest) sent(c rueidis.Completed, r rueidis.RedisResult) error {
	err := r.Error()
	in.rdb.Learned(doneScript, c, err)
	if err != nil {
		return hub.RedisErr(err)
	}
	in.held = nil
	return nil
}

// sendHeld sends the held finish alone, if any (before an idle wait, or as
// the consumer stops), through the waker's connection while it listens.
func (in *Ingest) sendHeld(ctx context.Context) error {
	if in.held == nil {
		return nil
	}
	c := in.rdb.ScriptCmd(doneScript, *in.held)
	return in.sent(c, hub.DoManyOn(in.rdb, ctx, in.wake.via(), rueidis.Commands{c})[0])
}

// count adds finished entries to ingest_entries_total.
func (in *Ingest) count(counted [Dead + 1]int) {
	for r := Published; r <= Dead; r++ {
		in.entries[r].Add(counted[r])
	}
}

// finishCalls are lua/ingest_done.lua's calls that finish a round (one for
// every partition on one Redis, one each on a cluster), what they finish by
// result, and whether some partition stopped at an entry to read again.
func (in *Ingest) finishCalls(parts []int, entries []Entry, from []int, outcomes []Outcome) (execs []rueidis.LuaExec, counted [Dead + 1]int, retried bool) {
	now := hub.NowTimestamp()
	keepAfter := strconv.FormatInt(time.Now().Add(-in.coreCfg.RecordTTL).UnixMilli(), 10)
	exec := func() *rueidis.LuaExec {
		if len(execs) == 0 || in.rdb.Sharded() {
			execs = append(execs, rueidis.LuaExec{Args: []string{Group, keepAfter, strconv.Itoa(maxDeadKept)}})
		}
		return &execs[len(execs)-1]
	}
	for _, p := range parts {
		var acked, dead []string
		trimTo := ""
		stopped := false
		for i, e := range entries {
			if from[i] != p {
				continue
			}
			o := outcomes[i]
			if stopped || o.Result == Retry {
				if !stopped {
					trimTo = e.ID // the first entry left to do
				}
				stopped = true
				continue
			}
			counted[o.Result]++
			acked = append(acked, e.ID)
			if o.Result == Dead {
				body, msg := e.Body, o.Message
				if len(body) > maxDeadEntry {
					body = body[:maxDeadEntry]
					msg += fmt.Sprintf(" (the entry's first %d of %d bytes are kept)", maxDeadEntry, len(e.Body))
				}
				dead = append(dead, e.ID, string(body), o.Code, msg, now)
			}
		}
		if stopped {
			retried = true // the rest stays pending: the next read returns it first
		} else if len(acked) > 0 {
			trimTo = nextID(acked[len(acked)-1])
		}
		if len(acked) == 0 {
			continue
		}
		e := exec()
		e.Keys = append(e.Keys, PartitionKey(p), DeadKey(p))
		e.Args = append(e.Args, trimTo, strconv.Itoa(len(acked)), strconv.Itoa(len(dead)/5))
		e.Args = append(append(e.Args, acked...), dead...)
	}
	return execs, counted, retried
}
