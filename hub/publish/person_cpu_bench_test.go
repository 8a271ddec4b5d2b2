package publish

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testredis"
)

// BenchmarkPersonCPU is what one recipient costs Redis' CPU in the
// fan-out's script: publishes to 1,000 recipients, fresh (people new to the
// hub each time) and warm (the same people each time), and from INFO
// commandstats the scripts' time and the commands they called, per
// recipient. Run:
//
//	go test -run '^$' -bench PersonCPU -benchtime 20x ./hub/publish/
func BenchmarkPersonCPU(b *testing.B) {
	const people = 1000
	for _, shape := range []string{"fresh", "warm", "floor"} {
		b.Run(shape, func(b *testing.B) {
			rdb := testredis.Client(b, testredis.Start(b).Addr())
			h, p := startPipeline(rdb)
			defer func() { _ = h.Close(context.Background()) }()
			publish := func(round int) {
				if shape == "floor" { // the same people each time, as warm
					floorFanout(b, rdb, round+1, 1, people)
					return
				}
				req := inbox.PublishRequest{PublishRequest: hub.PublishRequest{Room: 1, EventType: "comment.created",
					Data: []byte(`{"title":"A comment","text":"hello"}`)}}
				first := 1
				if shape == "fresh" {
					first += round * people
				}
				for u := first; u < first+people; u++ {
					req.RecipientIDs = append(req.RecipientIDs, int64(u))
				}
				if _, err := p.notify(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
			for round := range 5 { // the warm inboxes hold a few items, the scripts are loaded
				publish(round + b.N)
			}
			testredis.Do(b, rdb, "CONFIG", "RESETSTAT")
			b.ResetTimer()
			for round := range b.N {
				publish(round)
			}
			b.StopTimer()
			usec, calls := scriptStats(b, rdb)
			n := float64(b.N * people)
			b.ReportMetric(usec/n, "script-µs/recipient")
			b.ReportMetric(calls/n, "calls/recipient")
		})
	}
}

// scriptStats is INFO commandstats' time in scripts (µs), and the calls of
// the commands they called.
func scriptStats(b *testing.B, rdb rueidis.Client) (usec, calls float64) {
	info, err := rdb.Do(context.Background(), rdb.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		line, ok := strings.CutPrefix(line, "cmdstat_")
		name, stats, _ := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var n, us float64
		for _, kv := range strings.Split(stats, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				n, _ = strconv.ParseFloat(v, 64)
			case "usec":
				us, _ = strconv.ParseFloat(v, 64)
			}
		}
		switch name {
		case "evalsha", "eval":
			usec += us
		case "config|resetstat", "info":
		default:
			calls += n
		}
	}
	return usec, calls
}

// floorScript does for each recipient (16 keys each, as the inbox's) only
// the calls any design of the contract makes for a notification to a person
// whose small inbox exists: the mute check, the counts' read, the tombstone
// check, the item, the counts with the log's entry, unread_count, and the
// live notification.created with the item and the person's counts, built
// as the real one is. ARGV: the notificationId, the event type, the item's
// JSON head, the event's ms, then each recipient's channel.
const floorScript = `
local id, typ, head, ms = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local out = {}
for i = 0, #KEYS / 16 - 1 do
  local b = i * 16
  out[#out + 1] = 'dup'
  if redis.call('SISMEMBER', KEYS[b + 13], typ) == 0 then
    local c = redis.call('HMGET', KEYS[b + 14], 'v', 'i', 'u', 'n', 'q')
    if not redis.call('ZSCORE', KEYS[b + 15], id) and redis.call('HSETNX', KEYS[b + 1], id, '0') == 1 then
      local v, vis, unr, uns, q = (tonumber(c[1]) or 0) + 1, (tonumber(c[2]) or 0) + 1, (tonumber(c[3]) or 0) + 1,
        (tonumber(c[4]) or 0) + 1, (tonumber(c[5]) or 0) + 1
      local counts = '{"version":' .. v .. ',"visible":' .. vis .. ',"unread":' .. unr .. ',"unseen":' .. uns ..
        ',"archived":0,"snoozed":0,"byTag":{},"bySeverity":{"normal":{"visible":' .. vis .. ',"unread":' .. unr ..
        ',"unseen":' .. uns .. '}}}'
      redis.call('HSET', KEYS[b + 14], 'v', v, 'i', vis, 'u', unr, 'n', uns, 'q', q,
        '~' .. q, '+0\t' .. v .. ',' .. vis .. ',' .. unr .. ',' .. uns .. '\tc\t' .. id)
      redis.call('INCRBY', KEYS[b + 9], 1)
      redis.call('PUBLISH', ARGV[5 + i], '{"id":"' .. ms .. '-' .. q .. '","seq":' .. q ..
        ',"eventType":"' .. typ .. '","data":' .. head .. 'null,"activityAt":"2026-12-07T00:00:00.000Z","unread":' ..
        unr .. ',"counts":' .. counts .. '}}')
      out[#out] = 'new'
    end
  end
end
return out`

// floorFanout runs floorScript for a publish to users from..from+n-1, 20 a
// call, one call after the other (as the fan-out does).
func floorFanout(b *testing.B, rdb rueidis.Client, room, from, n int) {
	script := rueidis.NewLuaScript(floorScript)
	id := strconv.Itoa(room) + ":1765000000000-0"
	head := `{"notificationId":"` + id + `","roomId":` + strconv.Itoa(room) +
		`,"eventType":"comment.created","data":{"title":"A comment","text":"hello"},"publisherId":null,` +
		`"timestamp":"2026-12-07T00:00:00.000Z","readAt":null,"seenAt":null,"archivedAt":null,"snoozedUntil":null,` +
		`"severity":"normal","tags":[],"expiresAt":null,"group":`
	for start := from; start < from+n; start += 20 {
		keys, args := []string{}, []string{id, "comment.created", head, "1765000000000"}
		for u := int64(start); u < int64(min(start+20, from+n)); u++ {
			keys = append(append(keys, inbox.ItemKeys(u)...), inbox.UnreadCountKey(u), inbox.LogKey(u),
				"user:seq:"+hub.UserTag(u), inbox.ReadStatusKey(u), inbox.MutedKey(u), inbox.CountsKey(u), inbox.DeletedKey(u),
				"user:log:"+hub.UserTag(u))
			args = append(args, hub.UserChannel(u))
		}
		if err := script.Exec(context.Background(), rdb, keys, args).Error(); err != nil {
			b.Fatal(err)
		}
	}
}
