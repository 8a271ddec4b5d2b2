package publish

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testredis"
)

// Run answers each body in its place, whichever branch it takes: refused
// for what it says, plain (no one notified), with recipients. A room's
// events go in their order; with inOrder, one that fails for want of Redis
// leaves its room's later events unpublished (ErrSkipped) while the other
// rooms go on; without it, they go ahead. A refused event holds up nothing.
func TestRun_ARoomWaitsBehindAFailedEvent(t *testing.T) {
	for _, inOrder := range []bool{true, false} {
		rs := testredis.Start(t)
		rdb := testredis.Client(t, rs.Addr())
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		h := hub.New(hub.DefaultConfig(), rdb, log, hub.NewMetrics(nil))
		p := New(h, inbox.New(h, inbox.DefaultConfig(), log), DefaultConfig())
		// Room 42's first event cannot be published: its idempotency key
		// is not a string (Redis answers WRONGTYPE).
		testredis.Do(t, rdb, "HSET", hub.IdempotencyKey(42, "first"), "not", "a string")
		out := p.Run(context.Background(), []Body{
			{Raw: []byte(`{"roomId":42,"eventType":"comment.created","data":{"n":1},"recipientIds":[7],"idempotencyKey":"first"}`)},
			{Raw: []byte(`{"roomId":43,"eventType":"comment.created","data":{"n":2},"recipientIds":[7]}`)},
			{Raw: []byte(`{"roomId":42,"eventType":"comment.created","data":{"n":3},"recipientIds":[7]}`)},
			{Raw: []byte(`{"roomId":44,"eventType":"comment.created","data":{"n":4}}`)},
			{Raw: []byte(`not json`)},
			{Raw: []byte(`{"roomId":45,"eventType":"no.such.type","data":{},"recipientIds":[7]}`)},
			{Raw: []byte(`{"roomId":45,"eventType":"comment.created","data":{"n":6},"recipientIds":[7]}`)},
		}, inOrder)
		if len(out) != 7 {
			t.Fatalf("inOrder %v: %d outcomes for 7 bodies", inOrder, len(out))
		}
		if !out[0].Failed() || errors.Is(out[0].Err, ErrSkipped) {
			t.Errorf("inOrder %v: the event that cannot be published: %+v, want failed for want of Redis", inOrder, out[0])
		}
		for _, i := range []int{1, 3, 6} { // 6: behind a refusal, which a retry would not change
			if out[i].Err != nil || out[i].Result.StreamID == "" {
				t.Errorf("inOrder %v: body %d: %+v, want published", inOrder, i, out[i])
			}
		}
		if inOrder && !errors.Is(out[2].Err, ErrSkipped) {
			t.Errorf("in order: room 42's second event: %+v, want ErrSkipped", out[2])
		}
		if !inOrder && (out[2].Err != nil || out[2].Result.StreamID == "") {
			t.Errorf("out of order: room 42's second event: %+v, want published", out[2])
		}
		if r, ok := out[4].Refused(); !ok || r.Code != "COMMON400" {
			t.Errorf("inOrder %v: a body that is not JSON: %+v, want refused COMMON400", inOrder, out[4])
		}
		if r, ok := out[5].Refused(); !ok || r.Code != "NOTIF4001" {
			t.Errorf("inOrder %v: an event type the hub refuses: %+v, want refused NOTIF4001", inOrder, out[5])
		}
	}
}

// A plain event goes in the core's pipeline, or through the inbox when its
// room has events with recipients in the same run: sent again by either
// path, it is the same publish (a duplicate of the first).
func TestRun_APlainEventIsOnePublishByEitherPath(t *testing.T) {
	rs := testredis.Start(t)
	rdb := testredis.Client(t, rs.Addr())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := hub.New(hub.DefaultConfig(), rdb, log, hub.NewMetrics(nil))
	p := New(h, inbox.New(h, inbox.DefaultConfig(), log), DefaultConfig())
	ctx := context.Background()
	plain := Body{Raw: []byte(`{"roomId":50,"eventType":"comment.created","data":{"n":1},"idempotencyKey":"k"}`)}
	notify := Body{Raw: []byte(`{"roomId":50,"eventType":"comment.created","data":{"n":2},"recipientIds":[7]}`)}
	first := p.Run(ctx, []Body{plain}, true)[0]         // the core's pipeline
	again := p.Run(ctx, []Body{plain, notify}, true)[0] // the room has recipients: the inbox
	if first.Err != nil || again.Err != nil || !again.Result.Duplicate || again.Result.StreamID != first.Result.StreamID {
		t.Fatalf("first %+v, again %+v: want the second a duplicate of the first", first, again)
	}
	back := p.Run(ctx, []Body{plain}, true)[0]
	if back.Err != nil || !back.Result.Duplicate || back.Result.StreamID != first.Result.StreamID {
		t.Fatalf("sent a third time %+v, want a duplicate of %s", back, first.Result.StreamID)
	}
}
