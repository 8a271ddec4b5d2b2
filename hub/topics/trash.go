package topics

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/lua"
)

var deleteScript = hub.NewScript(lua.TopicDelete)

// The trash's cleaning: every trashEvery (trashIdle while there is none),
// one instance (lock:topics-trash) takes up to trashChunks chunks of the
// oldest trash key (~16,000 people) off the people's lists.
const (
	trashEvery  = 100 * time.Millisecond
	trashIdle   = time.Second // the pause when there is none
	trashChunks = 128
)

// Delete empties topic at once: the followers it had. Its chunks go to a
// trash key, cleaned from the people's lists in the background (an entry
// of theirs from before the delete is stale at once: a follow replaces
// it). Fan-outs of topic running now reach nobody more.
func (t *Topics) Delete(ctx context.Context, topic string) (int64, error) {
	for ms := time.Now().UnixMilli(); ; ms++ {
		member := topic + " " + strconv.FormatInt(ms, 10)
		// listed before the trash exists: a trash key is never left unlisted
		if _, err := hub.Call(t.rdb, ctx, t.rdb.B().Zadd().Key(TrashListKey).ScoreMember().ScoreMember(float64(ms), member).Build(), hub.NoReply); err != nil {
			return 0, err
		}
		res, err := hub.Run(t.rdb, ctx, deleteScript, append(topicKeys(topic), TrashKey(topic, ms)),
			[]string{strconv.FormatInt(ms, 10)}, rueidis.RedisResult.AsIntSlice)
		if err != nil {
			return 0, err
		}
		if len(res) == 2 && res[1] == 1 {
			return res[0], nil
		}
		// nothing went to the trash (a topic without followers), or its key was taken
		if _, err := hub.Call(t.rdb, ctx, t.rdb.B().Zrem().Key(TrashListKey).Member(member).Build(), hub.NoReply); err != nil {
			return 0, err
		}
		if len(res) == 2 {
			return res[0], nil
		}
	}
}

// runTrash cleans the trash until ctx ends.
func (t *Topics) runTrash(ctx context.Context) {
	t.core.EveryUnderLock(ctx, "topics-trash", trashEvery, func(ctx context.Context) (time.Duration, error) {
		empty, err := t.cleanTrash(ctx)
		if empty {
			return trashIdle, err // nothing to clean: no lock and no read every trashEvery
		}
		return 0, err
	})
}

// cleanTrash takes one batch of chunks of the oldest trash key off the
// people's lists, then off the trash; an emptied trash key is unlisted.
// empty: there was no trash.
func (t *Topics) cleanTrash(ctx context.Context) (empty bool, err error) {
	z, err := hub.Call(t.rdb, ctx, t.rdb.B().Zrange().Key(TrashListKey).Min("0").Max("0").Withscores().Build(), rueidis.RedisResult.AsZScores)
	if err != nil || len(z) == 0 {
		return err == nil, err
	}
	topic, msPart, _ := strings.Cut(z[0].Member, " ")
	ms, _ := strconv.ParseInt(msPart, 10, 64)
	key := TrashKey(topic, ms)
	scan, err := hub.Call(t.rdb, ctx, t.rdb.B().Hscan().Key(key).Cursor(0).Count(trashChunks).Build(), rueidis.RedisResult.AsScanEntry)
	if err != nil {
		return false, err
	}
	if len(scan.Elements) == 0 {
		if time.Since(time.UnixMilli(ms)) < staleAfter { // its delete may be under way
			return true, nil
		}
		_, err = hub.Call(t.rdb, ctx, t.rdb.B().Zrem().Key(TrashListKey).Member(z[0].Member).Build(), hub.NoReply)
		return false, err
	}
	var chunks []string
	var users []int64
	for i := 0; i+1 < len(scan.Elements); i += 2 {
		chunks = append(chunks, scan.Elements[i])
		for _, entry := range strings.Split(scan.Elements[i+1], ",") {
			id, _, _ := strings.Cut(entry, ":")
			if u, ok := hub.ParseID(id); ok {
				users = append(users, u)
			}
		}
	}
	if _, err := t.onUsers(ctx, users, "forget", topic, msPart); err != nil {
		return false, err
	}
	if _, err := hub.Call(t.rdb, ctx, t.rdb.B().Hdel().Key(key).Field(chunks...).Build(), hub.NoReply); err != nil {
		return false, err
	}
	left, err := hub.Call(t.rdb, ctx, t.rdb.B().Exists().Key(key).Build(), rueidis.RedisResult.AsInt64)
	if err != nil || left > 0 {
		return false, err
	}
	_, err = hub.Call(t.rdb, ctx, t.rdb.B().Zrem().Key(TrashListKey).Member(z[0].Member).Build(), hub.NoReply)
	return false, err
}
