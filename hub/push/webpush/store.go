package webpush

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/lua"
)

// MaxPerUser is how many subscriptions (browsers, devices) a user keeps:
// one more replaces the one sent to the hub longest ago.
const MaxPerUser = 10

// unseenFor is how long a subscription the browser never sends again is
// kept (the SDK sends it again whenever a page asks for the push state).
const unseenFor = 90 * 24 * time.Hour

var subscribeScript = hub.NewScript(lua.PushSubscribe)

// Store keeps users' subscriptions in Redis, under each user's hash tag.
type Store struct {
	rdb   *hub.Redis
	count atomic.Int64 // every user's subscriptions, as last read

	mu    sync.Mutex // orders what sets count: a read never undoes a later move
	moves int64      // how many times counted set count
}

// NewStore is the subscriptions of core's Redis; it registers the
// webpush_subscriptions gauge and, once core starts, reads the count every
// 15 s.
func NewStore(core *hub.Hub) *Store {
	s := &Store{rdb: core.Redis()}
	core.Metrics().Set.NewGauge("webpush_subscriptions", func() float64 { return float64(s.count.Load()) })
	core.OnStart(func() { core.Go(s.refreshCount) })
	return s
}

// entry is what the hash holds for one endpoint.
type entry struct {
	Sub Subscription `json:"sub"`
	At  int64        `json:"at"`            // when the browser last sent it (ms)
	Exp int64        `json:"exp,omitempty"` // when it expires (ms): expirationTime, else 90 days unseen
}

// Add keeps sub for user (checked by the caller), or refreshes it. An
// endpoint is one browser's: when another user held it (a shared computer,
// the next person signed in), it moves, so the last one's pushes stop
// reaching it.
func (s *Store) Add(ctx context.Context, user int64, sub Subscription, now time.Time) error {
	if err := s.own(ctx, user, sub.Endpoint); err != nil {
		return err
	}
	exp := now.Add(unseenFor).UnixMilli()
	if sub.ExpirationTime != nil && *sub.ExpirationTime > 0 && *sub.ExpirationTime < exp {
		exp = *sub.ExpirationTime
	}
	e, _ := json.Marshal(entry{Sub: sub, At: now.UnixMilli(), Exp: exp})
	gained, err := hub.Run(s.rdb, ctx, subscribeScript, []string{hub.PushSubscriptionsKey(user)},
		[]string{sub.Endpoint, string(e), strconv.FormatInt(now.UnixMilli(), 10), strconv.Itoa(MaxPerUser), strconv.FormatInt(unseenFor.Milliseconds(), 10)},
		rueidis.RedisResult.AsInt64)
	if err != nil {
		return err
	}
	return s.counted(ctx, gained)
}

// own records user as endpoint's owner and takes it from the one before.
// (The owner and the subscriptions live in different slots on a cluster:
// two steps. Two users subscribing one endpoint at once may both keep it
// until the next subscribe; the owner key says who came last.)
func (s *Store) own(ctx context.Context, user int64, endpoint string) error {
	uid := strconv.FormatInt(user, 10)
	set := s.rdb.B().Set().Key(hub.PushOwnerKey(endpoint)).Value(uid).Get().Px(unseenFor).Build()
	prev, err := hub.Call(s.rdb, ctx, set, rueidis.RedisResult.ToString)
	if errors.Is(err, rueidis.Nil) || (err == nil && prev == uid) {
		return nil
	}
	if err != nil {
		return err
	}
	before, ok := hub.ParseID(prev)
	if !ok {
		return nil // not a user id: nothing to take it from
	}
	_, err = s.Remove(ctx, before, endpoint)
	return err
}

// Remove forgets user's subscription at endpoint; false when there was none.
func (s *Store) Remove(ctx context.Context, user int64, endpoint string) (bool, error) {
	n, err := hub.Call(s.rdb, ctx, s.rdb.B().Hdel().Key(hub.PushSubscriptionsKey(user)).Field(endpoint).Build(), rueidis.RedisResult.AsInt64)
	if err != nil {
		return false, err
	}
	return n > 0, s.counted(ctx, -n)
}

// List returns user's live subscriptions, oldest sent first; it forgets the
// expired ones.
func (s *Store) List(ctx context.Context, user int64, now time.Time) ([]Subscription, error) {
	m, err := hub.Call(s.rdb, ctx, s.rdb.B().Hgetall().Key(hub.PushSubscriptionsKey(user)).Build(), rueidis.RedisResult.AsStrMap)
	if err != nil {
		return nil, err
	}
	var live []entry
	var gone []string
	for ep, raw := range m {
		var e entry
		if json.Unmarshal([]byte(raw), &e) != nil || e.Sub.Endpoint != ep || (e.Exp > 0 && e.Exp <= now.UnixMilli()) {
			gone = append(gone, ep)
			continue
		}
		live = append(live, e)
	}
	if len(gone) > 0 {
		n, err := hub.Call(s.rdb, ctx, s.rdb.B().Hdel().Key(hub.PushSubscriptionsKey(user)).Field(gone...).Build(), rueidis.RedisResult.AsInt64)
		if err == nil {
			err = s.counted(ctx, -n)
		}
		if err != nil {
			return nil, err
		}
	}
	subs := make([]Subscription, 0, len(live))
	slices.SortFunc(live, func(a, b entry) int { // oldest sent first, ties by endpoint
		return cmp.Or(cmp.Compare(a.At, b.At), strings.Compare(a.Sub.Endpoint, b.Sub.Endpoint))
	})
	for _, e := range live {
		subs = append(subs, e.Sub)
	}
	return subs, nil
}

// counted moves the count of every user's subscriptions by n.
func (s *Store) counted(ctx context.Context, n int64) error {
	if n == 0 {
		return nil
	}
	total, err := hub.Call(s.rdb, ctx, s.rdb.B().Incrby().Key(hub.PushSubscriptionsCountKey).Increment(n).Build(), rueidis.RedisResult.AsInt64)
	if err == nil {
		s.mu.Lock()
		s.moves++
		s.count.Store(max(total, 0))
		s.mu.Unlock()
	}
	return err
}

// refreshCount reads the count every 15 s (the other instances move it too).
func (s *Store) refreshCount(ctx context.Context) {
	t := time.NewTicker(15 * time.Second)
	defer t.Stop()
	for {
		s.mu.Lock()
		moves := s.moves
		s.mu.Unlock()
		n, err := hub.Call(s.rdb, ctx, s.rdb.B().Get().Key(hub.PushSubscriptionsCountKey).Build(), rueidis.RedisResult.AsInt64)
		s.mu.Lock()
		// nil: none yet. A move meanwhile is newer than what this read found.
		if (err == nil || errors.Is(err, rueidis.Nil)) && s.moves == moves {
			s.count.Store(max(n, 0))
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
