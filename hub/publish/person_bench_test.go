package publish

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testredis"
)

// BenchmarkPersonCost is what one person costs Redis: a publish with
// recipients to people who have nothing yet (their first notification),
// then another to the same people (a later one), each measured as
// used_memory's growth (INFO memory) per person, and per key kind as
// MEMORY USAGE of the first 100 people's keys, by the key's name up to its
// hash tag. Run:
//
//	go test -run '^$' -bench PersonCost -benchtime 1x ./hub/publish/
func BenchmarkPersonCost(b *testing.B) {
	const people = 10000
	for range b.N {
		rdb := testredis.Client(b, testredis.Start(b).Addr())
		h, p := startPipeline(rdb)
		for round, name := range []string{"first", "later"} {
			before := usedMemory(b, rdb)
			for from := 1; from <= people; from += inbox.MaxRecipients {
				req := inbox.PublishRequest{PublishRequest: hub.PublishRequest{Room: 1, EventType: "comment.created",
					Data: []byte(`{"title":"A comment","text":"hello"}`)}}
				for u := from; u < from+inbox.MaxRecipients && u <= people; u++ {
					req.RecipientIDs = append(req.RecipientIDs, int64(u))
				}
				if _, err := p.notify(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((usedMemory(b, rdb)-before)/people, name+"-B/person")
			if round == 0 {
				for kind, n := range keyKinds(b, rdb, 100) {
					b.ReportMetric(n, "first-B/"+kind)
				}
			}
		}
		if err := h.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// startPipeline starts a hub on rdb with its inbox and publish path, once
// its first reading of the registry lets it write as this version does.
func startPipeline(rdb rueidis.Client) (*hub.Hub, *Pipeline) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := hub.New(hub.DefaultConfig(), rdb, log, hub.NewMetrics(nil))
	p := New(h, inbox.New(h, inbox.DefaultConfig(), log), DefaultConfig())
	h.Start()
	for h.FleetVersion() < hub.InstanceVersion {
		time.Sleep(time.Millisecond)
	}
	return h, p
}

// usedMemory is Redis' used_memory, after a moment's lazy frees.
func usedMemory(b *testing.B, rdb rueidis.Client) float64 {
	return testredis.Stat(b, rdb, "memory", "used_memory")
}

// keyKinds is MEMORY USAGE of users 1..n's keys, averaged per user, by the
// key's name up to its hash tag ("inbox:order:").
func keyKinds(b *testing.B, rdb rueidis.Client, n int) map[string]float64 {
	keys, err := rdb.Do(context.Background(), rdb.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		b.Fatal(err)
	}
	sort.Strings(keys)
	out := map[string]float64{}
	for _, k := range keys {
		kind, tag, ok := strings.Cut(k, "{")
		if !ok {
			continue
		}
		var u int
		if _, err := fmt.Sscanf(tag, "%d}", &u); err != nil || u < 1 || u > n || strings.HasPrefix(kind, "room") {
			continue
		}
		bytes, err := rdb.Do(context.Background(), rdb.B().MemoryUsage().Key(k).Samples(0).Build()).AsInt64()
		if err != nil {
			b.Fatal(err)
		}
		out[strings.TrimSuffix(kind, ":")] += float64(bytes) / float64(n)
	}
	return out
}

// BenchmarkPersonFloor is what the keys a person's first notification needs
// cost Redis at the least, each with its expiry and nearly nothing in it:
// the two DESIGN names (inbox:{u} with one item, unread_count:{u}), then
// with a third key of one small field (the counts and log of a small inbox
// must live somewhere). Run:
//
//	go test -run '^$' -bench PersonFloor -benchtime 1x ./hub/publish/
func BenchmarkPersonFloor(b *testing.B) {
	const people = 10000
	ctx := context.Background()
	for range b.N {
		rdb := testredis.Client(b, testredis.Start(b).Addr())
		for _, keys := range []int{2, 3} {
			if err := rdb.Do(ctx, rdb.B().Flushall().Build()).Error(); err != nil {
				b.Fatal(err)
			}
			before := usedMemory(b, rdb)
			for u := int64(1); u <= people; u++ {
				cmds := rueidis.Commands{
					rdb.B().Hset().Key(inbox.ItemsKey(u)).FieldValue().FieldValue("1:1796650258414-0", "0").Build(),
					rdb.B().Expire().Key(inbox.ItemsKey(u)).Seconds(86400).Build(),
					rdb.B().Set().Key(inbox.UnreadCountKey(u)).Value("1").Ex(86400 * time.Second).Build(),
				}
				if keys == 3 {
					cmds = append(cmds, rdb.B().Hset().Key(inbox.CountsKey(u)).FieldValue().FieldValue("v", "1").Build(),
						rdb.B().Expire().Key(inbox.CountsKey(u)).Seconds(86400).Build())
				}
				for _, r := range rdb.DoMulti(ctx, cmds...) {
					if err := r.Error(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric((usedMemory(b, rdb)-before)/people, fmt.Sprintf("%dkeys-B/person", keys))
		}
	}
}

// BenchmarkPersonCostLarge is what each notification costs a person whose
// inbox is large (past 48 items: inbox:order, inbox:log): 1,000 people get
// 100 notifications, and used_memory's growth over the last 50 is
// averaged per notification. Run:
//
//	go test -run '^$' -bench PersonCostLarge -benchtime 1x ./hub/publish/
func BenchmarkPersonCostLarge(b *testing.B) {
	const people, rounds = 1000, 100
	for range b.N {
		rdb := testredis.Client(b, testredis.Start(b).Addr())
		h, p := startPipeline(rdb)
		var before float64
		for round := range rounds {
			if round == rounds/2 {
				before = usedMemory(b, rdb)
			}
			req := inbox.PublishRequest{PublishRequest: hub.PublishRequest{Room: 1, EventType: "comment.created",
				Data: []byte(`{"title":"A comment","text":"hello"}`)}}
			for u := 1; u <= people; u++ {
				req.RecipientIDs = append(req.RecipientIDs, int64(u))
			}
			if _, err := p.notify(context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric((usedMemory(b, rdb)-before)/people/(rounds/2), "B/person/notification")
		if err := h.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
