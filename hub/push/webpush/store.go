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
	s := &Store{rdb: core.Redis(), count: push.NewCounter(core, hub.PushSubscriptionsCountKey)}
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
// reaching it.
func (s *Store) Add(ctx context.Context, user int64, sub Subscription, now time.Time) error {
	if err := s.own(ctx, user, sub.Endpoint); err != nil {
		return err
	}
	exp := now.Add(unseenFor).UnixMilli()
	if sub.ExpirationTime != nil && *sub.ExpirationTime > 0 && *sub.ExpirationTime < exp {
		exp = *sub.ExpirationTime
	}
	e, _ := json.Marshal(entry{Sub: sub, Added: now.UnixMilli(), At: now.UnixMilli(), Exp: exp})
	gained, err := hub.Run(s.rdb, ctx, subscribeScript, []string{hub.PushSubscriptionsKey(user)},
		[]string{sub.Endpoint, string(e), strconv.FormatInt(now.UnixMilli(), 10), strconv.Itoa(MaxPerUser), strconv.FormatInt(unseenFor.Milliseconds(), 10)},
		rueidis.RedisResult.AsInt64)
	if err != nil {
		return err
	}
	return s.count.Add(ctx, gained)
}

// own records user as endpoint's owner and takes it from the one before.
// (The owner and the subscriptions live in different slots on a cluster:
// two steps. Two users subscribing one endpoint at once may both keep it
// until the next subscribe; the owner key says who came last.)
func (s *Store) own(ctx context.Context, user int64, endpoint string) error {
	before, err := push.Own(ctx, s.rdb, hub.PushOwnerKey(endpoint), user, unseenFor)
	if err != nil || before == 0 {
		return err
	}
	_, err = s.Remove(ctx, before, endpoint)
	return err
}

// Remove forgets user's subscription at endpoint; false when there was none.
func (s *Store) Remove(ctx context.Context, user int64, endpoint string) (bool, error) {
	res := hub.DoMany(s.rdb, ctx, rueidis.Commands{
		s.rdb.B().Hdel().Key(hub.PushSubscriptionsKey(user)).Field(endpoint).Build(),
		s.rdb.B().Hdel().Key(hub.PushSentKey(user)).Field(DeviceID(endpoint)).Build()})
	n, err := res[0].AsInt64()
	if err != nil {
		return false, hub.RedisErr(err)
	}
	return n > 0, s.count.Add(ctx, -n)
}

// DeviceID is the id of a browser's subscription in the user's device list.
func DeviceID(endpoint string) string { return push.DeviceID(hub.WebPushChannel, endpoint) }

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
	m, err := hub.Call(s.rdb, ctx, s.rdb.B().Hgetall().Key(hub.PushSubscriptionsKey(user)).Build(), rueidis.RedisResult.AsStrMap)
	if err != nil {
		return nil, err
	}
	var live []entry
	var gone, goneIDs []string
	for ep, raw := range m {
		var e entry
		if json.Unmarshal([]byte(raw), &e) != nil || e.Sub.Endpoint != ep || (e.Exp > 0 && e.Exp <= now.UnixMilli()) {
			gone, goneIDs = append(gone, ep), append(goneIDs, DeviceID(ep))
			continue
		}
		live = append(live, e)
	}
	if len(gone) > 0 {
		res := hub.DoMany(s.rdb, ctx, rueidis.Commands{
			s.rdb.B().Hdel().Key(hub.PushSubscriptionsKey(user)).Field(gone...).Build(),
			s.rdb.B().Hdel().Key(hub.PushSentKey(user)).Field(goneIDs...).Build()})
		n, err := res[0].AsInt64()
		if err == nil {
			err = s.count.Add(ctx, -n)
		}
		if err != nil {
			return nil, hub.RedisErr(err)
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
	sent, err := hub.Call(s.rdb, ctx, s.rdb.B().Hgetall().Key(hub.PushSentKey(user)).Build(), rueidis.RedisResult.AsStrMap)
	if err != nil {
		return nil, err
	}
	out := make([]push.Device, 0, len(live))
	for _, e := range live {
		id, added := DeviceID(e.Sub.Endpoint), e.Added
		if added == 0 {
			added = e.At // kept before entries said when they were added
		}
		out = append(out, push.Device{ID: id, Platform: hub.WebPushChannel, Label: browserOf(e.Sub.Endpoint), Enabled: !e.Off,
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
			return push.SetConsent(ctx, s.rdb, hub.PushSubscriptionsKey(user), e.Sub.Endpoint, on)
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
