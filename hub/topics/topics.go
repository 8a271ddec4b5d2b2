package topics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/lua"
)

// Limits of the topics' API.
const (
	MaxIDs      = 10000 // user ids in one follow or unfollow
	DefaultPage = 100   // a page's size when none is asked
	MaxPage     = 1000  // a page's largest size
	// topicBatch bounds the ids of one call on a topic's followers, and
	// userBatch the people of one call on their lists (one Redis; one each
	// on a cluster): no call holds Redis long.
	topicBatch = 1000
	userBatch  = 100
)

var (
	followScript   = hub.NewScript(lua.TopicFollow)
	unfollowScript = hub.NewScript(lua.TopicUnfollow)
	pageScript     = hub.NewScript(lua.TopicPage)
	userScript     = hub.NewScript(lua.TopicUser)
)

// keyPattern is a topic key: DESIGN's Topics.
var keyPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// CheckKey returns an error wrapping hub.ErrInvalid unless topic is a
// topic key.
func CheckKey(topic string) error {
	if !keyPattern.MatchString(topic) {
		return fmt.Errorf("%w: a topic key is 1 to 128 of A-Z a-z 0-9 _ . : -", hub.ErrInvalid)
	}
	return nil
}

// CheckIDs returns an error wrapping hub.ErrInvalid unless users are 1 to
// MaxIDs distinct positive user ids.
func CheckIDs(users []int64) error {
	if len(users) == 0 || len(users) > MaxIDs {
		return fmt.Errorf("%w: userIds holds 1 to %d ids", hub.ErrInvalid, MaxIDs)
	}
	seen := make(map[int64]bool, len(users))
	for _, u := range users {
		if u <= 0 || seen[u] {
			return fmt.Errorf("%w: userIds are distinct positive ids (%d)", hub.ErrInvalid, u)
		}
		seen[u] = true
	}
	return nil
}

// FullError refuses a follow that would take User past Max topics
// (TOPICS_PER_USER_MAX).
type FullError struct {
	User int64
	Max  int
}

func (e *FullError) Error() string {
	return fmt.Sprintf("user %d follows %d topics already, the most (TOPICS_PER_USER_MAX)", e.User, e.Max)
}

// Topics keeps who follows what on the core's Redis, and runs topic
// publishes' fan-outs into ib's inboxes.
type Topics struct {
	core    *hub.Hub
	rdb     *hub.Redis
	cfg     Config
	coreCfg hub.Config
	ib      *inbox.Inbox
	log     *slog.Logger
	run     *runner
}

// New is the topics on core's Redis, fanning topic publishes out into ib's
// inboxes (ib.UseFanouts). It registers its runner of fan-outs with core:
// call it before core.Start.
func New(core *hub.Hub, ib *inbox.Inbox, cfg Config, log *slog.Logger) *Topics {
	t := &Topics{core: core, rdb: core.Redis(), cfg: cfg, coreCfg: core.Config(), ib: ib, log: log,
		run: newRunner(core.Metrics().Set)}
	ib.UseFanouts(t)
	core.OnStart(func() {
		core.Go(t.runFanouts)
		core.Go(t.runTrash)
	})
	return t
}

// Follow makes users follow topic: the number of them who did not before,
// and the topic's followers after. A follower keeps the time and seq of
// their first follow. When it would take someone past TOPICS_PER_USER_MAX,
// it adds nobody and returns a *FullError naming the first such user (in
// users' order). The people's lists are written first, then the topic's:
// a follow cut off between them (Redis lost) lists the topic for someone
// the topic does not reach yet, until the follow is retried.
func (t *Topics) Follow(ctx context.Context, topic string, users []int64, now time.Time) (added, followers int64, err error) {
	// a person's entry from before the topic's last delete is stale: replaced
	deleted, err := hub.Call(t.rdb, ctx, t.rdb.B().Hget().Key(MetaKey(topic)).Field("dt").Build(), rueidis.RedisResult.AsInt64)
	if err != nil && !errors.Is(err, rueidis.Nil) {
		return 0, 0, err
	}
	at := strconv.FormatInt(max(now.UnixMilli(), deleted+1), 10) // after the delete, whatever the clocks say
	answers, err := t.onUsers(ctx, users, "follow", topic, at, strconv.Itoa(t.cfg.PerUserMax), strconv.FormatInt(deleted, 10))
	if err != nil {
		return 0, 0, err
	}
	var mine []int64 // added to their lists by this call
	var full *FullError
	for i, a := range answers {
		switch a {
		case "added":
			mine = append(mine, users[i])
		case "full":
			if full == nil {
				full = &FullError{User: users[i], Max: t.cfg.PerUserMax}
			}
		}
	}
	if full != nil {
		if len(mine) > 0 {
			if _, err := t.onUsers(ctx, mine, "undo", topic, at); err != nil {
				return 0, 0, err
			}
		}
		return 0, 0, full
	}
	return t.onTopic(ctx, followScript, topic, users)
}

// Unfollow makes users stop following topic: the number of them who did,
// and the topic's followers after. The topic's list goes first: a
// publish after it reaches none of them.
func (t *Topics) Unfollow(ctx context.Context, topic string, users []int64) (removed, followers int64, err error) {
	if removed, followers, err = t.onTopic(ctx, unfollowScript, topic, users); err != nil {
		return 0, 0, err
	}
	_, err = t.onUsers(ctx, users, "unfollow", topic, "")
	return removed, followers, err
}

// Followers is a page of topic's followers, ascending from after: at most
// limit ids, the topic's followers, and the last id when more follow.
func (t *Topics) Followers(ctx context.Context, topic string, after int64, limit int) (ids []int64, followers int64, next *int64, err error) {
	res, err := hub.Run(t.rdb, ctx, pageScript, topicKeys(topic),
		[]string{strconv.FormatInt(after, 10), strconv.Itoa(limit)}, rueidis.RedisResult.AsIntSlice)
	if err != nil {
		return nil, 0, nil, err
	}
	if len(res) == 0 {
		return nil, 0, nil, fmt.Errorf("%w: a page of followers without their number", hub.ErrRedisReply)
	}
	followers, ids = res[0], res[1:]
	if len(ids) > limit {
		ids = ids[:limit]
		last := ids[limit-1]
		next = &last
	}
	return ids, followers, next, nil
}

// Followed is one topic a person follows.
type Followed struct {
	TopicKey   string `json:"topicKey"`
	FollowedAt string `json:"followedAt"` // RFC 3339
}

// Of is a page of what user follows, by topic key ascending from after (""
// from the first): at most limit, and the last key when more follow.
func (t *Topics) Of(ctx context.Context, user int64, after string, limit int) (page []Followed, next *string, err error) {
	all, err := hub.Call(t.rdb, ctx, t.rdb.B().Hgetall().Key(UserKey(user)).Build(), rueidis.RedisResult.AsStrMap)
	if err != nil {
		return nil, nil, err
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		if k > after {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	page = []Followed{}
	for _, k := range keys {
		if len(page) == limit {
			last := page[limit-1].TopicKey // a copy: go1.26 miscompiles &page[i].TopicKey here (golang/go#81612)
			next = &last
			break
		}
		ms, _ := strconv.ParseInt(all[k], 10, 64)
		page = append(page, Followed{TopicKey: k, FollowedAt: hub.MsTimestamp(ms)})
	}
	return page, next, nil
}

// Leave makes user stop following topic: 1 when they did, else 0.
func (t *Topics) Leave(ctx context.Context, user int64, topic string) (int64, error) {
	answers, err := t.onUsers(ctx, []int64{user}, "unfollow", topic, "")
	if err != nil {
		return 0, err
	}
	// the topic's list too, whatever theirs said (a follow cut off between the two)
	if _, _, err := t.onTopic(ctx, unfollowScript, topic, []int64{user}); err != nil {
		return 0, err
	}
	if answers[0] == "1" {
		return 1, nil
	}
	return 0, nil
}

// onTopic runs script (follow or unfollow) on topic for users, ascending,
// topicBatch a call: the sum of the changed, and the followers after.
func (t *Topics) onTopic(ctx context.Context, script hub.Script, topic string, users []int64) (changed, followers int64, err error) {
	ids := slices.Clone(users)
	slices.Sort(ids)
	for start := 0; start < len(ids); start += topicBatch {
		args := make([]string, 0, topicBatch)
		for _, u := range ids[start:min(start+topicBatch, len(ids))] {
			args = append(args, strconv.FormatInt(u, 10))
		}
		res, err := hub.Run(t.rdb, ctx, script, topicKeys(topic), args, rueidis.RedisResult.AsIntSlice)
		if err != nil {
			return 0, 0, err
		}
		if len(res) != 2 {
			return 0, 0, fmt.Errorf("%w: a topic's change answered %d values", hub.ErrRedisReply, len(res))
		}
		changed, followers = changed+res[0], res[1]
	}
	return changed, followers, nil
}

// onUsers runs lua/topic_user.lua's action on users' lists, userBatch a
// call (one on a cluster): its answer for each user, in users' order.
func (t *Topics) onUsers(ctx context.Context, users []int64, action, topic, at string, extra ...string) ([]string, error) {
	batch := userBatch
	if t.rdb.Sharded() {
		batch = 1
	}
	args := append([]string{action, topic, at}, extra...)
	var execs []rueidis.LuaExec
	for start := 0; start < len(users); start += batch {
		e := rueidis.LuaExec{Args: args}
		for _, u := range users[start:min(start+batch, len(users))] {
			e.Keys = append(e.Keys, UserKey(u))
		}
		execs = append(execs, e)
	}
	out := make([]string, 0, len(users))
	for i, r := range hub.RunMany(t.rdb, ctx, userScript, execs) {
		answers, err := r.AsStrSlice()
		if err != nil {
			return nil, hub.RedisErr(err)
		}
		if len(answers) != len(execs[i].Keys) {
			return nil, fmt.Errorf("%w: people's topics answered %d values for %d", hub.ErrRedisReply, len(answers), len(execs[i].Keys))
		}
		out = append(out, answers...)
	}
	return out, nil
}
