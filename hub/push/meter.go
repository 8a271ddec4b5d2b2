package push

import (
	"context"
	"log/slog"
	"roomhub/hub"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// Meter counts one platform's pushes: push_send_seconds{platform} (each
// push's time, answered or not), push_sends_total{platform,outcome} (sent,
// retry, wait, permanent, gone) and push_devices_removed_total{platform}.
type Meter struct {
	seconds  *metrics.Histogram
	outcomes map[string]*metrics.Counter
	removed  *metrics.Counter
}

// outcomes are the words push_sends_total counts by: bounded, whatever a
// service answers.
var outcomes = []string{"sent", "retry", "wait", "permanent", "gone"}

// NewMeter registers platform's series in set, at zero from the start.
func NewMeter(set *metrics.Set, platform string) *Meter {
	m := &Meter{
		seconds:  set.GetOrCreateHistogram(`push_send_seconds{platform="` + platform + `"}`),
		outcomes: map[string]*metrics.Counter{},
		removed:  set.GetOrCreateCounter(`push_devices_removed_total{platform="` + platform + `"}`),
	}
	for _, o := range outcomes {
		m.outcomes[o] = set.GetOrCreateCounter(`push_sends_total{platform="` + platform + `",outcome="` + o + `"}`)
	}
	return m
}

// Observe counts a push begun at start and how it went.
func (m *Meter) Observe(start time.Time, a Answer) {
	o := "permanent"
	switch {
	case a.Sent:
		o = "sent"
	case !a.Wait.IsZero():
		m.outcomes["wait"].Inc()
		return // not tried: no time to count
	case a.Gone:
		o = "gone"
		m.removed.Inc()
	case a.Retryable:
		o = "retry"
	}
	m.seconds.UpdateDuration(start)
	m.outcomes[o].Inc()
}

// Ledger keeps what one platform's pushes leave behind: its metrics, when
// the hub last sent to a device (lastSentAt), a gone device forgotten.
type Ledger struct {
	platform string
	rdb      *hub.Redis
	meter    *Meter
	log      *slog.Logger
}

// NewLedger is platform's ledger on core's Redis and metrics.
func NewLedger(core *hub.Hub, log *slog.Logger, platform string) *Ledger {
	return &Ledger{platform: platform, rdb: core.Redis(), meter: NewMeter(core.Metrics().Set, platform), log: log}
}

// Settle counts a push to user's device id begun at start and answered a:
// sent, it notes when; gone, forget drops the device (the channel's own
// store).
func (l *Ledger) Settle(ctx context.Context, user int64, id string, start time.Time, a Answer, forget func(context.Context) error) {
	l.meter.Observe(start, a)
	switch {
	case a.Sent:
		if err := Sent(ctx, l.rdb, user, id, time.Now()); err != nil {
			l.log.WarnContext(ctx, l.platform+": noting a push sent", "user", user, "err", err)
		}
	case a.Gone:
		if err := forget(ctx); err != nil {
			l.log.WarnContext(ctx, l.platform+": forgetting a gone device", "user", user, "err", err)
		}
	}
}
