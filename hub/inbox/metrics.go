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
}

func newCounters(s *metrics.Set) *counters {
	return &counters{
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
