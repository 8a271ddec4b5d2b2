package inbox

import "github.com/VictoriaMetrics/metrics"

// counters are the inbox's counters, registered in the application's set up
// front so that /metrics lists them at zero.
type counters struct {
	inboxWrites     *metrics.Counter
	outboxRecovered *metrics.Counter
	flushes         *metrics.Counter
	flushEntries    *metrics.Counter
	flushFailures   map[string]*metrics.Counter // by class: temporary, permanent
	deadLetters     *metrics.Counter
	actions         map[string]*metrics.Counter // item actions asked for, by action (bulk ones once per call)
	wakes           *metrics.Counter            // snoozed items the timer worker woke
	expiries        *metrics.Counter            // expired items the timer worker removed
}

func newCounters(s *metrics.Set) *counters {
	actions := map[string]*metrics.Counter{}
	for _, a := range []string{ActionRead, ActionSeen, ActionArchive, ActionUnarchive, ActionSnooze, ActionUnsnooze, ActionDelete} {
		actions[a] = s.NewCounter(`inbox_actions_total{action="` + a + `"}`)
	}
	return &counters{
		actions:         actions,
		wakes:           s.NewCounter("inbox_wakes_total"),
		expiries:        s.NewCounter("inbox_expiries_total"),
		inboxWrites:     s.NewCounter("inbox_writes_total"),
		outboxRecovered: s.NewCounter("outbox_recovered_total"),
		flushes:         s.NewCounter("write_behind_flush_total"),
		flushEntries:    s.NewCounter("write_behind_flush_entries"),
		flushFailures: map[string]*metrics.Counter{
			"temporary": s.NewCounter(`write_behind_flush_failures_total{class="temporary"}`),
			"permanent": s.NewCounter(`write_behind_flush_failures_total{class="permanent"}`),
		},
		deadLetters: s.NewCounter("write_behind_dead_letters_total"),
	}
}
