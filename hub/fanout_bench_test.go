package hub

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
)

// BenchmarkFanout measures delivering one live event to every subscriber of a
// room (the listener's hot path), with consumers draining their buffers as SSE
// writers would. Other rooms exist to show that their number costs nothing.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{1, 100, 10000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			cfg := DefaultConfig()
			h := New(cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), NewMetrics(nil))
			for i := int64(1000); i < 2000; i++ { // idle rooms
				h.rooms.m[i] = &room{id: i, subs: map[*Subscriber]struct{}{}}
			}
			r := &room{id: 1, subs: map[*Subscriber]struct{}{}}
			h.rooms.m[1] = r
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for i := 0; i < n; i++ {
				s := &Subscriber{ch: make(chan *Event, cfg.ChannelCapacity), behindCh: make(chan struct{}, 1)}
				r.subs[s] = struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-s.ch:
						case <-stop:
							return
						}
					}
				}()
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
			close(stop)
			wg.Wait()
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
