package hub

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
)

// BenchmarkFanout measures delivering one live event to every member of a
// room (the listener's hot path): judging it by each member's position and
// handing the shared frame (and, on a page stream, the stream's id line) to a
// wire that takes it all at once, so the kernel's part is left out. Other
// rooms exist to show that their number costs nothing.
func BenchmarkFanout(b *testing.B) {
	for _, c := range []struct {
		n    int
		page bool
	}{{1, false}, {100, false}, {10000, false}, {100, true}} {
		n, page := c.n, c.page
		b.Run(fmt.Sprintf("subscribers=%d/page=%v", n, page), func(b *testing.B) {
			cfg := DefaultConfig()
			h := New(cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), NewMetrics(nil))
			for i := int64(1000); i < 2000; i++ { // idle rooms
				h.topics.m[i] = &topic{id: i}
			}
			r := &topic{id: 1}
			h.topics.m[1] = r
			wire := &countWire{}
			for i := 0; i < n; i++ {
				s := &Stream{h: h, done: make(chan struct{}), started: true, inline: true, wire: wire, page: page}
				m := &member{s: s, topic: r, topicID: 1, roomID: 1, placed: true}
				s.members = []*member{m}
				m.at = int32(len(r.subs))
				r.subs = append(r.subs, m)
			}
			data := []byte(`{"userId":2,"text":"hello"}`)
			events := make([]*Event, b.N)
			for i := range events {
				events[i] = newEvent(1, StreamID{uint64(i + 1), 0}, int64(i+1), "comment.created", data, "1", "2026-02-16T10:31:00Z")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for _, ev := range events {
				h.deliverLive(r, ev)
			}
			b.StopTimer()
			b.ReportMetric(float64(n), "subs")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/delivery")
			if got := wire.frames.Load(); got != int64(b.N*n) {
				b.Fatalf("%d frames written, want %d", got, b.N*n)
			}
		})
	}
}

// BenchmarkParseWireMessage measures decoding one pub/sub message into an
// event with its SSE frame (done once per event per hub, not per subscriber).
func BenchmarkParseWireMessage(b *testing.B) {
	msg := []byte(`{"id":"1708070460000-0","seq":7,"roomId":42,"eventType":"comment.created","publisherId":"2","timestamp":"2026-02-16T10:31:00.000Z","data":{"userId":2,"text":"hello"}}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if ev, _ := parseWireMessage(42, msg, true); ev == nil {
			b.Fatal("parse failed")
		}
	}
}
