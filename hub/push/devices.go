package push

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/lua"
)

// What a user's phones may be.
const (
	// MaxPerPlatform is how many devices a user keeps on a platform: one
	// more replaces the one registered longest ago.
	MaxPerPlatform = 10
	// DeviceTTL is how long a device the app never registers again is
	// kept (an app registers at every start; FCM drops a token unused for
	// 270 days).
	DeviceTTL = 270 * 24 * time.Hour
	// MaxLabel bounds a device's label, in bytes.
	MaxLabel = 100
	// Sandbox is the APNs environment of a development build.
	Sandbox = "sandbox"
	// MaxNewTokens is how many tokens and endpoints new to a user (not
	// held by them already) they may register within NewTokenWindow: an
	// app registers the same token at every start, and a token changes
	// rarely, so more is a loop minting owner keys.
	MaxNewTokens = 100
	// NewTokenWindow is the window of MaxNewTokens.
	NewTokenWindow = 24 * time.Hour
)

// TooManyTokens is the answer to a registration past MaxNewTokens: Wait
// is how long until the window ends.
type TooManyTokens struct{ Wait time.Duration }

func (e *TooManyTokens) Error() string {
	return fmt.Sprintf("more than %d new push tokens in %v; retry after %v", MaxNewTokens, NewTokenWindow, e.Wait)
}

// Device is one of a user's phones or browsers, as a settings page lists
// it. Its ID is not its token.
type Device struct {
	ID          string     `json:"id"`
	Platform    string     `json:"platform"`
	Label       string     `json:"label"`
	Enabled     bool       `json:"enabled"`
	AddedAt     time.Time  `json:"addedAt"`
	LastSentAt  *time.Time `json:"lastSentAt"`
	Token       string     `json:"-"`
	Environment string     `json:"-"` // apns: "sandbox" for a development build, else ""
}

// DeviceID is the id of a platform's token: the same for the same token,
// and not the token.
func DeviceID(platform, token string) string {
	sum := sha256.Sum256([]byte(platform + "\n" + token))
	return hex.EncodeToString(sum[:8])
}

// Registration is what an app says of its device.
type Registration struct {
	Platform    string  `json:"platform"`
	Token       string  `json:"token"`
	Label       *string `json:"label"`
	Environment string  `json:"environment"`
	Enabled     *bool   `json:"enabled"`
	Replaces    string  `json:"replaces"`
}

// Check says what is wrong with r (nil: nothing): a platform of the hub's
// own (fcm, apns), a token of its size and alphabet, a label of at most
// MaxLabel bytes, an environment only for apns.
func (r Registration) Check() error {
	if err := CheckToken(r.Platform, r.Token); err != nil {
		return err
	}
	if r.Replaces != "" {
		if err := CheckToken(r.Platform, r.Replaces); err != nil {
			return fmt.Errorf("replaces: %w", err)
		}
	}
	if r.Label != nil && len(*r.Label) > MaxLabel {
		return fmt.Errorf("label is over %d bytes", MaxLabel)
	}
	if r.Label != nil && (!utf8.ValidString(*r.Label) || strings.IndexFunc(*r.Label, func(c rune) bool { return unicode.In(c, unicode.Cc, unicode.Cf) }) >= 0) {
		// A settings page shows it: no control character, no bidi override.
		return errors.New("label must be text without control or format characters")
	}
	switch {
	case r.Environment == "" || (r.Platform == APNSChannel && (r.Environment == "production" || r.Environment == Sandbox)):
		return nil
	case r.Platform != APNSChannel:
		return errors.New("environment is for apns devices only")
	}
	return errors.New(`environment must be "production" or "sandbox"`)
}

// Canonical is a platform's token as the hub keeps it: APNs tokens are
// hex, and one phone's token in upper and lower case is one device.
func Canonical(platform, token string) string {
	if platform == APNSChannel {
		return strings.ToLower(token)
	}
	return token
}

// CheckToken says what is wrong with a platform's token: FCM's are at most
// 4,096 bytes of [A-Za-z0-9_:-]; APNs' are 64 hex digits, or newer ones up
// to 200.
func CheckToken(platform, token string) error {
	switch platform {
	case FCMChannel:
		if token == "" || len(token) > 4096 || strings.IndexFunc(token, func(r rune) bool {
			return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == ':' || r == '-')
		}) >= 0 {
			return errors.New("an fcm token is 1 to 4096 bytes of A-Z, a-z, 0-9, _, : and -")
		}
	case APNSChannel:
		if len(token) < 64 || len(token) > 200 || len(token)%2 != 0 || strings.IndexFunc(token, func(r rune) bool {
			return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F')
		}) >= 0 {
			return errors.New("an apns token is the device token in hex: 64 to 200 hex digits")
		}
	default:
		return errors.New(`platform must be "fcm" or "apns" (a browser subscribes at /api/v1/push/subscriptions)`)
	}
	return nil
}

// entry is what the devices hash holds for one device.
type entry struct {
	Platform    string `json:"p"`
	Token       string `json:"t"`
	Label       string `json:"l,omitempty"`
	Environment string `json:"e,omitempty"`
	Off         bool   `json:"off,omitempty"`
	Added       int64  `json:"added"`
	At          int64  `json:"at"`
}

var (
	registerScript = hub.NewScript(lua.PushDeviceRegister)
	consentScript  = hub.NewScript(lua.PushConsent)
)

// Devices keeps users' phones (fcm and apns tokens) in Redis, under each
// user's hash tag.
type Devices struct {
	rdb    *hub.Redis
	counts map[string]*Counter // by platform
}

// NewDevices is the devices of core's Redis; it registers the
// push_devices{platform} gauges.
func NewDevices(core *hub.Hub) *Devices {
	d := &Devices{rdb: core.Redis(), counts: map[string]*Counter{}}
	for _, p := range []string{FCMChannel, APNSChannel} {
		d.counts[p] = NewCounter(core, DevicesCountKey(p))
		core.Metrics().Set.NewGauge(`push_devices{platform="`+p+`"}`, d.counts[p].Value)
	}
	return d
}

// Register keeps r's device (checked by the caller) for user, or refreshes
// it. A token is one device's: when another user held it (the app's next
// person signed in), it moves. A refreshed token (Replaces) keeps the
// replaced device's consent, label and addedAt.
func (d *Devices) Register(ctx context.Context, user int64, r Registration, now time.Time) error {
	r.Token, r.Replaces = Canonical(r.Platform, r.Token), Canonical(r.Platform, r.Replaces)
	id := DeviceID(r.Platform, r.Token)
	owner := DeviceOwnerKey(r.Platform, r.Token)
	take := func(before int64) error { _, err := d.Remove(ctx, before, r.Platform, r.Token); return err }
	if err := Own(ctx, d.rdb, owner, user, DeviceTTL, take); err != nil {
		return err
	}
	e := entry{Platform: r.Platform, Token: r.Token, Environment: r.Environment, Added: now.UnixMilli(), At: now.UnixMilli()}
	if e.Environment == "production" {
		e.Environment = ""
	}
	saidLabel, saidEnabled := "0", "0"
	if r.Label != nil {
		e.Label, saidLabel = *r.Label, "1"
	}
	if r.Enabled != nil {
		e.Off, saidEnabled = !*r.Enabled, "1"
	}
	replaces := ""
	if r.Replaces != "" {
		replaces = DeviceID(r.Platform, r.Replaces)
	}
	raw, _ := json.Marshal(e)
	res, err := hub.Run(d.rdb, ctx, registerScript, []string{DevicesKey(user), SentKey(user)},
		[]string{id, string(raw), saidLabel, saidEnabled, strconv.Itoa(MaxPerPlatform), replaces, strconv.FormatInt(DeviceTTL.Milliseconds(), 10)},
		rueidis.RedisResult.ToArray)
	if err != nil {
		return err
	}
	gained, err := res[0].AsInt64()
	if err != nil {
		return hub.RedisErr(err)
	}
	if err := d.counts[r.Platform].Add(ctx, gained); err != nil {
		return err
	}
	for _, v := range res[1:] { // the entries that left: their owner keys go, if still this user's
		if tok, err := v.ToString(); err == nil {
			if err := Disown(ctx, d.rdb, DeviceOwnerKey(r.Platform, tok), user); err != nil {
				return err
			}
		}
	}
	return Recheck(ctx, d.rdb, owner, user, func() error { _, err := d.Remove(ctx, user, r.Platform, r.Token); return err })
}

// Own records user as the owner at key (for ttl), after a check of the
// user's budget of new tokens when the key did not name them; when another
// user owned it, take(that user) runs first. (The owner and the devices
// live in different slots on a cluster: separate steps, made safe by
// Recheck after the write.)
func Own(ctx context.Context, rdb *hub.Redis, key string, user int64, ttl time.Duration, take func(before int64) error) error {
	uid := strconv.FormatInt(user, 10)
	prev, err := hub.Call(rdb, ctx, rdb.B().Get().Key(key).Build(), rueidis.RedisResult.ToString)
	if err != nil && !errors.Is(err, rueidis.Nil) {
		return err
	}
	if prev != uid {
		if err := spendNewToken(ctx, rdb, user); err != nil {
			return err
		}
	}
	prev, err = hub.Call(rdb, ctx, rdb.B().Set().Key(key).Value(uid).Get().Px(ttl).Build(), rueidis.RedisResult.ToString)
	if errors.Is(err, rueidis.Nil) || (err == nil && prev == uid) {
		return nil
	}
	if err != nil {
		return err
	}
	if before, ok := hub.ParseID(prev); ok {
		return take(before)
	}
	return nil // not a user id: nothing to take it from
}

// spendNewToken takes one of user's MaxNewTokens, or answers TooManyTokens.
func spendNewToken(ctx context.Context, rdb *hub.Redis, user int64) error {
	key := NewTokensKey(user)
	res := hub.DoMany(rdb, ctx, rueidis.Commands{
		rdb.B().Incr().Key(key).Build(),
		rdb.B().Pexpire().Key(key).Milliseconds(NewTokenWindow.Milliseconds()).Nx().Build(),
		rdb.B().Pttl().Key(key).Build()})
	n, err := res[0].AsInt64()
	if err != nil {
		return hub.RedisErr(err)
	}
	if n > MaxNewTokens {
		wait, _ := res[2].AsInt64()
		return &TooManyTokens{Wait: time.Duration(max(wait, 1000)) * time.Millisecond}
	}
	return nil
}

// Disown deletes the owner key at key when it still names user (an entry
// of theirs left: its token's owner key goes with it).
func Disown(ctx context.Context, rdb *hub.Redis, key string, user int64) error {
	_, err := hub.Run(rdb, ctx, hub.LockReleaseScript, []string{key}, []string{strconv.FormatInt(user, 10)}, rueidis.RedisResult.AsInt64)
	return err
}

// Recheck reads the owner key at key after user's entry was written, and
// runs remove when another user owns it now: two users registering one
// token at once both write their entry, and only the last owner keeps it.
func Recheck(ctx context.Context, rdb *hub.Redis, key string, user int64, remove func() error) error {
	now, err := hub.Call(rdb, ctx, rdb.B().Get().Key(key).Build(), rueidis.RedisResult.ToString)
	if errors.Is(err, rueidis.Nil) || (err == nil && now != strconv.FormatInt(user, 10)) {
		return remove()
	}
	return err
}

// Remove forgets user's device of platform with token, and its owner key
// when that still names user; false when there was none.
func (d *Devices) Remove(ctx context.Context, user int64, platform, token string) (bool, error) {
	token = Canonical(platform, token)
	id := DeviceID(platform, token)
	res := hub.DoMany(d.rdb, ctx, rueidis.Commands{
		d.rdb.B().Hdel().Key(DevicesKey(user)).Field(id).Build(),
		d.rdb.B().Hdel().Key(SentKey(user)).Field(id).Build()})
	n, err := res[0].AsInt64()
	if err != nil {
		return false, hub.RedisErr(err)
	}
	if err := Disown(ctx, d.rdb, DeviceOwnerKey(platform, token), user); err != nil {
		return false, err
	}
	return n > 0, d.counts[platform].Add(ctx, -n)
}

// List is user's devices of every platform the hub keeps here (fcm, apns),
// first added first, with when the hub last sent to each.
func (d *Devices) List(ctx context.Context, user int64) ([]Device, error) {
	res := hub.DoMany(d.rdb, ctx, rueidis.Commands{
		d.rdb.B().Hgetall().Key(DevicesKey(user)).Build(),
		d.rdb.B().Hgetall().Key(SentKey(user)).Build()})
	held, err := res[0].AsStrMap()
	if err != nil {
		return nil, hub.RedisErr(err)
	}
	sent, err := res[1].AsStrMap()
	if err != nil {
		return nil, hub.RedisErr(err)
	}
	return devicesOf(held, sent), nil
}

// Enabled is user's devices of platform that may be sent to: one read of
// the devices alone (a push needs no lastSentAt).
func (d *Devices) Enabled(ctx context.Context, user int64, platform string) ([]Device, error) {
	held, err := hub.Call(d.rdb, ctx, d.rdb.B().Hgetall().Key(DevicesKey(user)).Build(), rueidis.RedisResult.AsStrMap)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(devicesOf(held, nil), func(x Device) bool { return x.Platform != platform || !x.Enabled }), nil
}

// devicesOf reads the devices hash (and the sent hash, nil: not read),
// first added first.
func devicesOf(held, sent map[string]string) []Device {
	out := make([]Device, 0, len(held))
	for id, raw := range held {
		var e entry
		if json.Unmarshal([]byte(raw), &e) != nil {
			continue
		}
		out = append(out, Device{ID: id, Platform: e.Platform, Label: e.Label, Enabled: !e.Off, AddedAt: time.UnixMilli(e.Added).UTC(),
			LastSentAt: SentAt(sent, id), Token: e.Token, Environment: e.Environment})
	}
	slices.SortFunc(out, func(a, b Device) int { return cmp.Or(a.AddedAt.Compare(b.AddedAt), strings.Compare(a.ID, b.ID)) })
	return out
}

// SetEnabled sets consent on user's device id; false when user has none
// of that id.
func (d *Devices) SetEnabled(ctx context.Context, user int64, id string, on bool) (bool, error) {
	return SetConsent(ctx, d.rdb, DevicesKey(user), id, on)
}

// SetConsent sets consent on the entry field of the hash at key (a device
// id, or a browser's endpoint); false when there is none.
func SetConsent(ctx context.Context, rdb *hub.Redis, key, field string, on bool) (bool, error) {
	arg := "0"
	if on {
		arg = "1"
	}
	_, err := hub.Run(rdb, ctx, consentScript, []string{key}, []string{field, arg}, rueidis.RedisResult.ToString)
	if errors.Is(err, rueidis.Nil) {
		return false, nil
	}
	return err == nil, err
}

// Sent records that the hub sent to user's device id at now (lastSentAt).
func Sent(ctx context.Context, rdb *hub.Redis, user int64, id string, now time.Time) error {
	return hub.CallMany(rdb, ctx, rueidis.Commands{
		rdb.B().Hset().Key(SentKey(user)).FieldValue().FieldValue(id, strconv.FormatInt(now.UnixMilli(), 10)).Build(),
		rdb.B().Pexpire().Key(SentKey(user)).Milliseconds(DeviceTTL.Milliseconds()).Build()})
}

// SentAt is when the hub last sent to device id, from the sent hash read
// whole (nil: never).
func SentAt(sent map[string]string, id string) *time.Time {
	ms, err := strconv.ParseInt(sent[id], 10, 64)
	if err != nil {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}
