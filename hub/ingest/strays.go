package ingest

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// Stray is a stream under ingest: that the hub will never read: a
// partition at or past INGEST_PARTITIONS, or a name without braces. A
// backend that writes there (a wrong partition count, a typo) loses its
// events silently; the log says so at start.
type Stray struct {
	Key     string
	Entries int64
}

// strayScans bounds the SCAN calls Strays makes on each node (1,000 keys
// looked at each): a look, not a walk of a big keyspace.
const strayScans = 100

// Strays looks once (a bounded SCAN of every node) for ingest streams the
// hub will never read, with their lengths.
func (in *Ingest) Strays(ctx context.Context) ([]Stray, error) {
	var out []Stray
	for _, node := range in.rdb.Nodes() {
		var cursor uint64
		for range strayScans {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match("ingest:*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				return out, hub.RedisErr(err)
			}
			var odd []string
			for _, k := range e.Elements {
				if !in.known(k) {
					odd = append(odd, k)
				}
			}
			if len(odd) > 0 {
				cmds := make(rueidis.Commands, len(odd))
				for i, k := range odd {
					cmds[i] = node.B().Xlen().Key(k).Build()
				}
				for i, r := range node.DoMulti(ctx, cmds...) {
					if n, err := r.AsInt64(); err == nil { // not a stream: not a backend's
						out = append(out, Stray{Key: odd[i], Entries: n})
					}
				}
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return out, nil
}

// known says whether k is a key of the hub's under ingest: a partition it
// reads, a dead list, the instances' count or an ingest lease.
func (in *Ingest) known(k string) bool {
	if k == InstancesKey {
		return true
	}
	rest, ok := strings.CutPrefix(k, "ingest:dead:")
	if !ok {
		rest, ok = strings.CutPrefix(k, "ingest:")
	}
	if !ok || !strings.HasPrefix(rest, "{") || !strings.HasSuffix(rest, "}") {
		return false
	}
	p, err := strconv.Atoi(rest[1 : len(rest)-1])
	return err == nil && p >= 0 && p < in.cfg.Partitions && (k == PartitionKey(p) || k == DeadKey(p))
}

// logStrays logs each stray stream once, at start.
func (in *Ingest) logStrays(ctx context.Context) {
	strays, err := in.Strays(ctx)
	if err != nil && ctx.Err() == nil {
		in.log.Warn("ingest: looking for streams the hub will never read", "err", err)
	}
	for _, s := range strays {
		in.log.Warn("ingest: a stream the hub will never read (a partition at or past INGEST_PARTITIONS, or a name without braces)",
			"key", s.Key, "entries", s.Entries, "partitions", in.cfg.Partitions)
	}
}
