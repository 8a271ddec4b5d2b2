package webpush

import (
	"cmp"
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/hub/push"
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
	count *push.Counter // every user's subscriptions
}

// NewStore is the subscriptions of core's Redis; it registers the
// webpush_subscriptions gauge.
func NewStore(core *hub.Hub) *Store {
	s := &Store{rdb: core.Redis(), count: push.NewCounter(core, SubscriptionsCountKey)}
	core.Metrics().Set.NewGauge("webpush_subscriptions", s.count.Value)
	return s
}

// entry is what the hash holds for one endpoint.
type entry struct {
	Sub   Subscription `json:"sub"`
	Added int64        `json:"added,omitempty"` // when it was first sent (ms)
	At    int64        `json:"at"`              // when the browser last sent it (ms)
	Exp   int64        `json:"exp,omitempty"`   // when it expires (ms): expirationTime, else 90 days unseen
	Off   bool         `json:"off,omitempty"`   // consent withdrawn in a device list: kept, sent nothing
}

// Add keeps sub for user (checked by the caller), or refreshes it. An
// endpoint is one browser's: when another user held it (a shared computer,
// the next person signed in), it moves, so the last one's pushes stop
// reaching it. replaces (” none) is the endpoint this browser had before
// it renewed its subscription: the new one keeps its consent and addedAt.
func (s *Store) Add(ctx context.Context, user int64, sub Subscription, replaces string, now time.Time) error {
	owner := OwnerKey(sub.Endpoint)
	take := func(before int64) error { _, err := s.Remove(ctx, before, sub.Endpoint); return err }
	if err := push.Own(ctx, s.rdb, owner, user, unseenFor, take); err != nil {
		return err
	}
	exp := now.Add(unseenFor).UnixMilli()
	if sub.ExpirationTime != nil && *sub.ExpirationTime > 0 && *sub.ExpirationTime < exp {
		exp = *sub.ExpirationTime
	}
	e, _ := json.Marshal(entry{Sub: sub, Added: now.UnixMilli(), At: now.UnixMilli(), Exp: exp})
	res, err := hub.Run(s.rdb, ctx, subscribeScript, []string{SubscriptionsKey(user)},
		[]string{sub.Endpoint, string(e), strconv.FormatInt(now.UnixMilli(), 10), strconv.Itoa(MaxPerUser), strconv.FormatInt(unseenFor.Milliseconds(), 10), replaces},
		rueidis.RedisResult.ToArray)
	if err != nil {
		return err
	}
	gained, err := res[0].AsInt64()
	if err != nil {
		return hub.RedisErr(err)
	}
	if err := s.count.Add(ctx, gained); err != nil {
		return err
	}
	var left []string
	for _, v := range res[1:] {
		if ep, err := v.ToString(); err == nil {
			left = append(left, ep)
		}
	}
	if err := s.forget(ctx, user, left); err != nil {
		return err
	}
	return push.Recheck(ctx, s.rdb, owner, user, func() error { _, err := s.Remove(ctx, user, sub.Endpoint); return err })
}

// forget deletes what is kept beside endpoints that left user's hash: when
// the hub last sent to each, and each owner key that still names user.
func (s *Store) forget(ctx context.Context, user int64, endpoints []string) error {
	if len(endpoints) == 0 {
		return nil
	}
	ids := make([]string, len(endpoints))
	for i, ep := range endpoints {
		ids[i] = DeviceID(ep)
	}
	if _, err := hub.Call(s.rdb, ctx, s.rdb.B().Hdel().Key(push.SentKey(user)).Field(ids...).Build(), rueidis.RedisResult.AsInt64); err != nil {
		return err
	}
	for _, ep := range endpoints {
		if err := push.Disown(ctx, s.rdb, OwnerKey(ep), user); err != nil {
			return err
		}
	}
	return nil
}

// Remove forgets user's subscription at endpoint (and its owner key, when
// that still names user); false when there was none.
func (s *Store) Remove(ctx context.Context, user int64, endpoint string) (bool, error) {
	n, err := hub.Call(s.rdb, ctx, s.rdb.B().Hdel().Key(SubscriptionsKey(user)).Field(endpoint).Build(), rueidis.RedisResult.AsInt64)
	if err != nil {
		return false, err
	}
	if err := s.forget(ctx, user, []string{endpoint}); err != nil {
		return false, err
	}
	return n > 0, s.count.Add(ctx, -n)
}

// DeviceID is the id of a browser's subscription in the user's device list.
func DeviceID(endpoint string) string { return push.DeviceID(push.WebPushChannel, endpoint) }

// List returns user's live subscriptions, oldest sent first (enabled
// only: those the person did not turn off); it forgets the expired ones.
func (s *Store) List(ctx context.Context, user int64, now time.Time, enabledOnly bool) ([]Subscription, error) {
	live, err := s.entries(ctx, user, now)
	subs := make([]Subscription, 0, len(live))
	for _, e := range live {
		if !enabledOnly || !e.Off {
			subs = append(subs, e.Sub)
		}
	}
	return subs, err
}

// entries returns user's live entries, oldest sent first; it forgets the
// expired ones (and when the hub last sent to them).
func (s *Store) entries(ctx context.Context, user int64, now time.Time) ([]entry, error) {
	m, err := hub.Call(s.rdb, ctx, s.rdb.B().Hgetall().Key(SubscriptionsKey(user)).Build(), rueidis.RedisResult.AsStrMap)
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
		n, err := hub.Call(s.rdb, ctx, s.rdb.B().Hdel().Key(SubscriptionsKey(user)).Field(gone...).Build(), rueidis.RedisResult.AsInt64)
		if err == nil {
			err = s.count.Add(ctx, -n)
		}
		if err == nil {
			err = s.forget(ctx, user, gone)
		}
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(live, func(a, b entry) int { // oldest sent first, ties by endpoint
		return cmp.Or(cmp.Compare(a.At, b.At), strings.Compare(a.Sub.Endpoint, b.Sub.Endpoint))
	})
	return live, nil
}

// Devices is user's browsers as a device list shows them: each one's
// push service names its label (Chrome, Firefox, Safari, Edge).
func (s *Store) Devices(ctx context.Context, user int64, now time.Time) ([]push.Device, error) {
	live, err := s.entries(ctx, user, now)
	if err != nil {
		return nil, err
	}
	sent, err := hub.Call(s.rdb, ctx, s.rdb.B().Hgetall().Key(push.SentKey(user)).Build(), rueidis.RedisResult.AsStrMap)
	if err != nil {
		return nil, err
	}
	out := make([]push.Device, 0, len(live))
	for _, e := range live {
		id, added := DeviceID(e.Sub.Endpoint), e.Added
		if added == 0 {
			added = e.At // kept before entries said when they were added
		}
		out = append(out, push.Device{ID: id, Platform: push.WebPushChannel, Label: browserOf(e.Sub.Endpoint), Enabled: !e.Off,
			AddedAt: time.UnixMilli(added).UTC(), LastSentAt: push.SentAt(sent, id)})
	}
	return out, nil
}

// SetEnabled sets consent on user's browser id (DeviceID); false when
// user has none of that id.
func (s *Store) SetEnabled(ctx context.Context, user int64, id string, on bool, now time.Time) (bool, error) {
	live, err := s.entries(ctx, user, now)
	if err != nil {
		return false, err
	}
	for _, e := range live {
		if DeviceID(e.Sub.Endpoint) == id {
			return push.SetConsent(ctx, s.rdb, SubscriptionsKey(user), e.Sub.Endpoint, on)
		}
	}
	return false, nil
}

// browserOf names the browser a push service serves, by its endpoint's
// host; else the host.
func browserOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	for suffix, name := range map[string]string{"fcm.googleapis.com": "Chrome", "mozilla.com": "Firefox", "push.apple.com": "Safari",
		"notify.windows.com": "Edge"} {
		if host == suffix || strings.HasSuffix(host, "."+suffix) {
			return name
		}
	}
	return host
}
