package ingest

import (
	"context"
	"strings"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// markUnreadable records whether partition p's key is not a stream, and
// says so in the log when that changes: the partition is skipped (never
// holding up the others) until its key is a stream again, or gone.
func (in *Ingest) markUnreadable(p int, bad bool, why string) {
	if in.unreadable[p].Swap(bad) == bad {
		return
	}
	if bad {
		in.log.Error("ingest: a partition cannot be read: its key is not a stream; the others go on", "partition", p, "key", PartitionKey(p), "found", why)
		return
	}
	in.log.Info("ingest: a partition that could not be read is a stream again", "partition", p)
}

// wrongType says whether err is Redis's answer to a command on a key of
// another type.
func wrongType(err error) bool { return err != nil && strings.Contains(err.Error(), "WRONGTYPE") }

// dropUnreadable finds which of parts' keys are not streams (one pipeline
// of TYPE) and leaves them.
func (in *Ingest) dropUnreadable(ctx context.Context, parts []int) error {
	cmds := make(rueidis.Commands, len(parts))
	for i, p := range parts {
		cmds[i] = in.rdb.B().Type().Key(PartitionKey(p)).Build()
	}
	for i, r := range hub.DoMany(in.rdb, ctx, cmds) {
		t, err := r.ToString()
		if err != nil {
			return hub.RedisErr(err)
		}
		if t != "stream" && t != "none" {
			in.leave(ctx, parts[i], "reading it")
		}
	}
	return nil
}

// leave gives up partition p, whose key is not a stream: it is marked
// unreadable, so no instance's share takes it until a sample finds it a
// stream again.
func (in *Ingest) leave(ctx context.Context, p int, why string) {
	in.markUnreadable(p, true, why)
	delete(in.owned, p)
	in.release(ctx, []int{p})
	in.publishOwned()
}
