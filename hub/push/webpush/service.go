package webpush

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/hub/push"
)

// Service is the webpush channel: the hub's keys, its users'
// subscriptions and the sender. Its Push is the channel's delivery.Sender.
type Service struct {
	ledger       *push.Ledger
	keys         Keys
	store        *Store
	sender       *Sender
	allowPrivate bool
	allowedHosts []string
}

// New is the webpush channel of cfg on core: the keys from WEBPUSH_VAPID_*
// (a bad pair is a *hub.ConfigError naming the variable), or, in the
// embedded dev mode with none set, a pair kept in its Redis. With keys
// configured, a dev pair an earlier run left in Redis is deleted. A push
// takes at most timeout (delivery's hand-off limit). tlsConf is nil but in
// tests that stand up their own push service.
func New(ctx context.Context, core *hub.Hub, cfg Config, timeout time.Duration, log *slog.Logger, tlsConf *tls.Config) (*Service, error) {
	var keys Keys
	var err error
	subject := cfg.Subject
	switch {
	case cfg.KeysSet():
		if keys, err = cfg.keys(); err != nil {
			return nil, err
		}
		rdb := core.Redis()
		n, err := hub.Call(rdb, ctx, rdb.B().Del().Key(VAPIDKey).Build(), rueidis.RedisResult.AsInt64)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			log.Info("webpush: deleted the dev key pair kept in Redis: WEBPUSH_VAPID_* are set")
		}
	case !core.Config().Embedded():
		return nil, &hub.ConfigError{Var: "WEBPUSH_VAPID_PUBLIC_KEY", Value: "", Reason: "the webpush channel with a real Redis needs the WEBPUSH_VAPID_* keys"}
	default:
		if keys, err = devKeys(ctx, core.Redis()); err != nil {
			return nil, err
		}
		subject = "mailto:dev@roomhub.invalid"
		log.Warn("webpush: no WEBPUSH_VAPID_* keys: the embedded dev mode made a key pair (kept in its Redis at "+VAPIDKey+"); set your own with a real Redis",
			"publicKey", keys.Public)
	}
	if cfg.AllowPrivate {
		log.Warn("webpush: WEBPUSH_ALLOW_PRIVATE_ENDPOINTS=true: subscriptions may point at loopback, link-local and private addresses (the SSRF rule is off): tests and dev only")
	}
	return &Service{
		keys: keys, ledger: push.NewLedger(core, log, push.WebPushChannel), store: NewStore(core), allowPrivate: cfg.AllowPrivate, allowedHosts: cfg.AllowedHosts,
		sender: NewSender(keys, subject, cfg.AllowPrivate, timeout, tlsConf), // as a gateway hand-off is bounded
	}, nil
}

// devKeys is the key pair kept in Redis: this instance's, or the one
// another instance made first.
func devKeys(ctx context.Context, rdb *hub.Redis) (Keys, error) {
	made, err := NewKeys()
	if err != nil {
		return Keys{}, err
	}
	setnx := rdb.B().Setnx().Key(VAPIDKey).Value(made.Public + " " + made.Private()).Build()
	if _, err := hub.Call(rdb, ctx, setnx, rueidis.RedisResult.AsInt64); err != nil { // 0: another instance's is there
		return Keys{}, err
	}
	v, err := hub.Call(rdb, ctx, rdb.B().Get().Key(VAPIDKey).Build(), rueidis.RedisResult.ToString)
	if err != nil {
		return Keys{}, err
	}
	pub, priv, _ := strings.Cut(v, " ")
	return ParseKeys(pub, priv)
}

// PublicKey is the key browsers subscribe with (applicationServerKey).
func (s *Service) PublicKey() string { return s.keys.Public }

// BadSubscription is a subscription the hub refuses, and why.
type BadSubscription struct{ Reason string }

func (e *BadSubscription) Error() string { return "webpush: " + e.Reason }

// Subscribe checks sub (a *BadSubscription when refused) and keeps it.
func (s *Service) Subscribe(ctx context.Context, user int64, sub Subscription, replaces string) error {
	if err := sub.Check(s.allowedHosts, s.allowPrivate); err != nil {
		return &BadSubscription{Reason: err.Error()}
	}
	if e := sub.ExpirationTime; e != nil && *e > 0 && *e <= time.Now().UnixMilli() {
		return &BadSubscription{Reason: "expirationTime: has passed (the browser subscribes again: the SDK's state() does)"}
	}
	if len(replaces) > maxEndpoint {
		return &BadSubscription{Reason: fmt.Sprintf("replaces: over %d bytes", maxEndpoint)}
	}
	return s.store.Add(ctx, user, sub, replaces, time.Now())
}

// Unsubscribe forgets user's subscription at endpoint; false when none was kept.
func (s *Service) Unsubscribe(ctx context.Context, user int64, endpoint string) (bool, error) {
	return s.store.Remove(ctx, user, endpoint)
}

// Subscriptions is user's live subscriptions, enabled or not.
func (s *Service) Subscriptions(ctx context.Context, user int64) ([]Subscription, error) {
	return s.store.List(ctx, user, time.Now(), false)
}

// Devices is user's browsers as their device list shows them.
func (s *Service) Devices(ctx context.Context, user int64) ([]push.Device, error) {
	return s.store.Devices(ctx, user, time.Now())
}

// SetEnabled sets consent on user's browser id; false when user has none
// of that id.
func (s *Service) SetEnabled(ctx context.Context, user int64, id string, on bool) (bool, error) {
	return s.store.SetEnabled(ctx, user, id, on, time.Now())
}

// Push sends a hand-off's items to every one of user's enabled
// subscriptions (each browser) at once and answers each; a subscription
// its push service says is gone (404, 410) is forgotten. It is the webpush
// channel's delivery.Sender.
func (s *Service) Push(ctx context.Context, user int64, items []json.RawMessage) ([]push.Answer, error) {
	subs, err := s.store.List(ctx, user, time.Now(), true)
	if err != nil || len(subs) == 0 {
		return nil, err
	}
	p, _, ok := Of(user, items)
	if !ok {
		return []push.Answer{{Code: "INVALID_ARGUMENT"}}, nil
	}
	return push.Each(subs, func(sub Subscription) push.Answer {
		start := time.Now()
		p := p
		p.User, p.Share = user, sub.Endpoint == subs[0].Endpoint // each hand-off sends one push whatever the pool
		a := s.sender.Send(ctx, sub, p).Answer(time.Now())
		s.ledger.Settle(ctx, user, DeviceID(sub.Endpoint), start, a, func(ctx context.Context) error {
			_, err := s.store.Remove(ctx, user, sub.Endpoint)
			return err
		})
		return a
	}), nil
}

// Close lets the sender's idle connections go.
func (s *Service) Close() { s.sender.Close() }
