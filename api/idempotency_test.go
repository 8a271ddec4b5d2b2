package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"roomhub/hub"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

func TestPublish_Idempotency(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	c := th.OpenStream(t, 8, 1, "")
	body := `{"roomId":8,"eventType":"member.joined","data":{"u":1},"idempotencyKey":"join-1"}`
	var wg sync.WaitGroup
	results := make([]hub.PublishResult, 50)
	codes := make([]int, 50)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, th.URL+"/api/v1/notifications/publish", strings.NewReader(body))
			req.Header.Set("X-Internal-Key", th.Cfg.InternalAPIKey)
			resp, err := testhub.HTTPClient.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var env struct{ Result hub.PublishResult }
			_ = json.NewDecoder(resp.Body).Decode(&env)
			codes[i], results[i] = resp.StatusCode, env.Result
		}(i)
	}
	wg.Wait()
	fresh := 0
	for i, r := range results {
		if codes[i] != 200 || r.StreamID != results[0].StreamID {
			t.Fatalf("publish %d: %d %+v, want 200 with id %s", i, codes[i], r, results[0].StreamID)
		}
		if !r.Duplicate {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("%d publishes were not duplicates, want exactly 1", fresh)
	}
	code, env := th.Get(t, "/api/v1/rooms/8/events?since=0", th.Token(t, 1))
	var page hub.EventsPage
	testhub.Remarshal(t, env.Result, &page)
	joins := 0
	for _, e := range page.Events {
		if e.EventType == "member.joined" {
			joins++
		}
	}
	if code != 200 || joins != 1 {
		t.Fatalf("history holds %d member.joined events, want 1", joins)
	}
	if f := c.Next(t, testhub.Wait); f.ID != results[0].StreamID {
		t.Fatalf("delivered %+v", f)
	}
	marker := th.Publish(t, 8, "member.joined", map[string]any{"marker": true})
	if f := c.Next(t, testhub.Wait); f.ID != marker.StreamID {
		t.Fatalf("a duplicate was delivered: got %+v before the marker", f)
	}
	code, env = th.PublishRaw(t, `{"roomId":8,"eventType":"member.joined","data":{"u":2},"idempotencyKey":"join-1"}`)
	if code != 409 || env.Code != "NOTIF4091" {
		t.Fatalf("reuse with another body: %d %+v", code, env)
	}
	// Keys are per room: the same key in another room is a new event.
	code, env = th.PublishRaw(t, `{"roomId":9,"eventType":"member.joined","data":{"u":1},"idempotencyKey":"join-1"}`)
	var other hub.PublishResult
	testhub.Remarshal(t, env.Result, &other)
	if code != 200 || other.Duplicate {
		t.Fatalf("same key, other room: %d %+v", code, env)
	}
}
