package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"roomhub/api"
	"roomhub/hub"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// Each event of a batch answers exactly as it would alone, in its place.
func TestPublishBatch_EachEventAnswersAsAlone(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	big := strings.Repeat("x", int(th.Pipeline.MaxData()))
	code, first := th.PublishRaw(t, `{"roomId":3,"eventType":"comment.created","data":{"n":0},"idempotencyKey":"k1"}`)
	if code != 200 {
		t.Fatal("publish")
	}
	var original hub.PublishResult
	testhub.Remarshal(t, first.Result, &original)
	code, res := th.Batch(t,
		`{"roomId":1,"eventType":"comment.created","data":{"n":1}}`,
		`{"roomId":1,"eventType":"nope","data":{}}`,
		`{"roomId":2,"eventType":"comment.created","data":{"pad":"`+big+`"}}`,
		`{"roomId":2,"eventType":"comment.created","data":{"n":2},"recipientIds":[5]}`,
		`{"roomId":3,"eventType":"comment.created","data":{"n":0},"idempotencyKey":"k1"}`,
		`{"roomId":3,"eventType":"comment.created","data":{"n":9},"idempotencyKey":"k1"}`,
		`{"roomId":0}`,
		`[1]`,
	)
	if code != 200 || len(res) != 8 {
		t.Fatalf("batch: %d %+v", code, res)
	}
	want := []string{"ok", "NOTIF4001", "COMMON413", "ok", "duplicate", "NOTIF4091", "COMMON400", "COMMON400"}
	for i, w := range want {
		r := res[i]
		switch {
		case w == "ok" || w == "duplicate":
			if !r.IsSuccess || r.Result == nil || r.Result.StreamID == "" || r.Result.Duplicate != (w == "duplicate") {
				t.Errorf("event %d: %+v, want %s", i, r, w)
			}
		case r.IsSuccess || r.Code != w || r.Message == "":
			t.Errorf("event %d: %+v, want %s", i, r, w)
		}
	}
	if dup := res[4].Result; dup == nil || dup.StreamID != original.StreamID {
		t.Errorf("the duplicate answered %+v, want the first publish's streamId %s", dup, original.StreamID)
	}
	if n := th.UnreadOf(t, 5); n != 1 {
		t.Fatalf("the batch's recipient has %d unread", n)
	}
	tooMany := `{"events":[` + strings.TrimSuffix(strings.Repeat(`{},`, api.MaxBatch+1), ",") + `]}`
	for _, bad := range []string{`{"events":[]}`, tooMany, `{}`, `nope`} {
		code, env := th.Do(t, http.MethodPost, "/api/v1/notifications/publish/batch",
			map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey, "Content-Type": "application/json"}, bad)
		if code != 400 || env.Code != "COMMON400" {
			t.Errorf("batch %.40s: %d %+v, want 400", bad, code, env)
		}
	}
	if code, _ := th.Do(t, http.MethodPost, "/api/v1/notifications/publish/batch", nil, `{"events":[{}]}`); code != 401 {
		t.Fatalf("a batch without the internal key: %d", code)
	}
}

// Events to one room keep their order in the batch, rooms side by side.
func TestPublishBatch_KeepsEachRoomsOrder(t *testing.T) {
	batchKeepsOrder(t, testhub.Start(t, testredis.Start(t).Addr(), nil))
}

// On a 3-master cluster the pipeline goes to every node, each room's
// events in their order.
func TestCluster_PublishBatchKeepsEachRoomsOrder(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t)
	batchKeepsOrder(t, testhub.Start(t, cl.Addrs()[0], func(c *testhub.Configs) {
		c.RedisURL = "redis+cluster://" + strings.Join(cl.Addrs(), ",")
	}))
}

func batchKeepsOrder(t *testing.T, th *testhub.Hub) {
	var events []string
	for i := range 300 {
		events = append(events, fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{"n":%d}}`, 10+i%3, i))
	}
	code, res := th.Batch(t, events...)
	if code != 200 || len(res) != 300 {
		t.Fatalf("batch: %d %d results", code, len(res))
	}
	for room := int64(10); room < 13; room++ {
		got := th.HistoryNs(t, room)
		for i := 1; i < len(got); i++ {
			if got[i] != got[i-1]+3 {
				t.Fatalf("room %d's history: %v, not the batch's order", room, got)
			}
		}
		if len(got) != 100 {
			t.Fatalf("room %d holds %d events, want 100", room, len(got))
		}
	}
}

// BenchmarkPublishBatch compares 500 events to 500 rooms published one
// request each (8 at a time, as a backend would) with one batch of 500.
//
//	go test -run '^$' -bench PublishBatch -benchtime 20x ./api/
func BenchmarkPublishBatch(b *testing.B) {
	th := testhub.Start(b, testredis.Start(b).Addr(), nil)
	events := make([]string, 500)
	for i := range events {
		events[i] = fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{"n":%d}}`, 1000+i, i)
	}
	hdr := map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey, "Content-Type": "application/json"}
	b.Run("single", func(b *testing.B) {
		for range b.N {
			sem := make(chan struct{}, 8)
			errs := make(chan error, len(events))
			for _, e := range events {
				sem <- struct{}{}
				go func() {
					defer func() { <-sem }()
					if code, _, err := th.TryDo(http.MethodPost, "/api/v1/notifications/publish", hdr, e); err != nil || code != 200 {
						errs <- fmt.Errorf("publish: %d %v", code, err)
					}
				}()
			}
			for range cap(sem) {
				sem <- struct{}{}
			}
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*len(events))/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("batch", func(b *testing.B) {
		body := `{"events":[` + strings.Join(events, ",") + `]}`
		for range b.N {
			if code, _, err := th.TryDo(http.MethodPost, "/api/v1/notifications/publish/batch", hdr, body); err != nil || code != 200 {
				b.Fatalf("batch: %d %v", code, err)
			}
		}
		b.ReportMetric(float64(b.N*len(events))/b.Elapsed().Seconds(), "events/s")
	})
}
