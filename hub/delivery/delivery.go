package delivery

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"golang.org/x/sync/semaphore"

	"roomhub/hub"
	"roomhub/lua"
)

// Delivery schedules, hands off and tracks deliveries beyond the tab. Create
// it with New before the core starts; its background work is the core's.
type Delivery struct {
	core    *hub.Hub
	rdb     *hub.Redis
	cfg     Config
	coreCfg hub.Config
	log     *slog.Logger
	rules   map[string]Rules // event type → channel → rule
	caps    map[string]Cap
	capsArg string // caps as lua/delivery_claim.lua takes them
	// items reads a user's inbox items (package inbox's Items: the inbox
	// builds on delivery, so the caller hands them over).
	items Items
	// keysTTLArg is keysTTL in ms, as the scripts take it.
	keysTTLArg string
	client     *http.Client
	set        *metrics.Set
	states     map[string]*atomic.Int64 // deliveries by state since start, for the fleet's figures
	due        atomic.Int64             // the backlog, for the deliveries_due gauge
	oldest     atomic.Int64             // how long the oldest due delivery has waited, ms

	// budget bounds the bytes of the items this instance's hand-offs hold
	// at once (claimed and not yet ended): DELIVERY_INFLIGHT_MB, whatever
	// PUBLISH_MAX_BYTES is.
	budget *semaphore.Weighted

	mu       sync.Mutex
	inFlight map[int64]bool // users this instance is claiming or handing off for

	// shares are each channel's slots for hand-offs in progress (made by
	// the poller before its first job: channelShares).
	shares map[string]chan struct{}

	// Senders send the hand-offs of the channels the hub sends itself
	// (webpush, fcm, apns), by channel; the rest go to the gateway.
	Senders map[string]Sender

	// Concurrency bounds the users one instance hands off for at once.
	Concurrency int
	// ItemMaxBytes is the largest event data a hand-off may carry per item
	// (PUBLISH_MAX_BYTES): a claim reserves that much per item it may take.
	ItemMaxBytes int64
}

var (
	claimScript    = hub.NewScript(lua.DeliveryClaim)
	endScript      = hub.NewScript(lua.DeliveryEnd)
	renewScript    = hub.NewScript(lua.DeliveryRenew)
	redriveScript  = hub.NewScript(lua.DeliveryRedrive)
	zsetPageScript = hub.NewScript(lua.ZsetPage)
)

// Items is what lua/inbox_item.lua, which the claim includes, takes to read
// a user's inbox items.
type Items struct {
	Keys   func(user int64) []string // the user's item keys, in its order
	Bodies string                    // where the events' bodies are (its BODIES)
}

// New returns the deliveries of cfg on core. A bad DELIVERY_RULES or
// DELIVERY_CAPS is a *hub.ConfigError naming it. With channels on it
// registers its worker with core; call it before core.Start. items is
// package inbox's Items (see the package comment).
func New(core *hub.Hub, cfg Config, log *slog.Logger, items Items) (*Delivery, error) {
	rules, caps, err := cfg.parse(core.Config())
	if err != nil {
		return nil, err
	}
	arg := map[string][2]int{}
	for ch, c := range caps {
		arg[ch] = [2]int{c.PerHour, c.PerDay}
	}
	capsArg, _ := json.Marshal(arg)
	d := &Delivery{
		core: core, rdb: core.Redis(), cfg: cfg, coreCfg: core.Config(), log: log, rules: rules, caps: caps, capsArg: string(capsArg), items: items,
		client:       gatewayClient(cfg.Timeout),
		budget:       semaphore.NewWeighted(cfg.InflightBytes),
		set:          core.Metrics().Set,
		inFlight:     map[int64]bool{},
		Senders:      map[string]Sender{},
		Concurrency:  64,
		ItemMaxBytes: 65536,
	}
	d.keysTTLArg = itoa(d.keysTTL().Milliseconds())
	d.states = map[string]*atomic.Int64{}
	for _, sr := range stateReasons {
		d.states[sr[0]] = new(atomic.Int64)
	}
	core.StatsFrom("deliveries", d.stateTotals)
	for _, ch := range unselected(rules, cfg.Channels) {
		log.Warn("delivery: a channel is on but no rule in DELIVERY_RULES selects it: nothing goes out on it unless a publish's delivery field names it (the key \"*\" is every event type's rule)",
			"channel", ch)
	}
	d.set.NewGauge("deliveries_due", func() float64 { return float64(d.due.Load()) })
	d.set.NewGauge("deliveries_due_oldest_seconds", func() float64 { return float64(d.oldest.Load()) / 1000 })
	for _, ch := range cfg.Channels {
		d.set.GetOrCreateHistogram(`delivery_sink_duration_seconds{channel="` + ch + `"}`)
		for _, sr := range stateReasons {
			d.set.GetOrCreateCounter(fmt.Sprintf(`deliveries_total{channel=%q,state=%q,reason=%q}`, ch, sr[0], sr[1]))
		}
	}
	if len(cfg.Channels) > 0 {
		core.OnStart(func() {
			core.Go(d.runPoller)
			core.Go(d.runBacklog)
		})
	}
	return d, nil
}

// stateReasons are the (state, reason) pairs deliveries_total counts, listed
// at zero from the start.
var stateReasons = [][2]string{
	{"scheduled", ""}, {"scheduled", "redrive"}, {"sent", ""}, {"retrying", ""}, {"dead", ""},
	{"canceled", "seen"}, {"canceled", "read"}, {"canceled", "archived"}, {"canceled", "deleted"},
	{"canceled", "disabled"}, {"canceled", "muted"},
	{"skipped", "online"}, {"skipped", "rate_limited"}, {"skipped", "deduplicated"}, {"skipped", "unsubscribed"},
	{"deferred", "quiet_hours"},
}

// count adds one to deliveries_total{channel,state,reason}.
func (d *Delivery) count(ch, state, reason string) {
	if n := d.states[state]; n != nil {
		n.Add(1)
	}
	d.set.GetOrCreateCounter(fmt.Sprintf(`deliveries_total{channel=%q,state=%q,reason=%q}`, ch, state, reason)).Inc()
}

// stateTotals is this instance's deliveries by state since it started.
func (d *Delivery) stateTotals() map[string]int64 {
	out := make(map[string]int64, len(d.states))
	for st, n := range d.states {
		out[st] = n.Load()
	}
	return out
}

// Channels are the configured channels.
func (d *Delivery) Channels() []string { return d.cfg.Channels }

// On reports whether channel ch is one of DELIVERY_CHANNELS; a nil
// Delivery (none configured) has none.
func (d *Delivery) On(ch string) bool { return d != nil && d.cfg.On(ch) }

// keysTTL is how long a user's delivery keys live after their last write:
// the record's days, plus the longest wait a delivery may have.
func (d *Delivery) keysTTL() time.Duration {
	return d.coreCfg.RecordTTL + (MaxAfterSecs+MaxDigestSecs)*time.Second + 24*time.Hour
}

// CountScheduled counts the deliveries p scheduled for n recipients.
func (d *Delivery) CountScheduled(p Plan, n int) {
	if n == 0 {
		return
	}
	for _, ch := range p.Channels {
		d.set.GetOrCreateCounter(fmt.Sprintf(`deliveries_total{channel=%q,state=%q,reason=%q}`, ch, "scheduled", "")).Add(n)
		d.states["scheduled"].Add(int64(n))
	}
}
