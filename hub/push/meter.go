package push

import (
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
