package api_test

import (
	"fmt"
	"strings"
	"testing"

	"roomhub/api"
	"roomhub/hub"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

func TestEvents_API(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	tok := th.Token(t, 1)
	var ids []string
	for i := 0; i < 7; i++ {
		ids = append(ids, th.Publish(t, 60, "comment.created", map[string]any{"n": i}).StreamID)
	}
	page := func(q string) (int, api.Envelope, hub.EventsPage) {
		code, env := th.Get(t, "/api/v1/rooms/60/events?"+q, tok)
		var p hub.EventsPage
		if code == 200 {
			testhub.Remarshal(t, env.Result, &p)
		}
		return code, env, p
	}
	_, _, p := page("since=0&count=3")
	if len(p.Events) != 3 || !p.HasMore || *p.LastID != ids[2] || p.Events[0].ID != ids[0] {
		t.Fatalf("first page %+v", p)
	}
	e := p.Events[0]
	if e.EventType != "comment.created" || string(e.Data) != `{"n":0}` || e.PublisherID == nil || *e.PublisherID != "1" || e.Timestamp == "" {
		t.Fatalf("event shape %+v", e)
	}
	_, _, p = page("since=" + *p.LastID + "&count=3")
	if len(p.Events) != 3 || !p.HasMore || p.Events[0].ID != ids[3] {
		t.Fatalf("second page %+v", p)
	}
	_, _, p = page("since=" + *p.LastID + "&count=3")
	if len(p.Events) != 1 || p.HasMore || *p.LastID != ids[6] {
		t.Fatalf("last page %+v", p)
	}
	code, env, _ := page("since=" + ids[6])
	if code != 200 || !strings.Contains(fmt.Sprint(env.Result), "events:[]") || !strings.Contains(fmt.Sprint(env.Result), "lastId:<nil>") {
		t.Fatalf("empty page: %+v", env.Result)
	}
	ms := strings.Split(ids[0], "-")[0]
	if _, _, p = page("since=" + ms + "&count=500"); len(p.Events) < 6 {
		t.Fatalf("bare ms since: %d events", len(p.Events))
	}
	if _, _, p = page("since=0&count=100000"); len(p.Events) != 7 {
		t.Fatalf("clamped count: %d events", len(p.Events))
	}
	for _, q := range []string{"", "since=", "since=abc", "since=-1", "since=0&count=0", "since=0&count=-2", "since=0&count=x"} {
		if code, env, _ := page(q); code != 400 || env.Code != "COMMON400" {
			t.Errorf("%q: %d %s, want 400 COMMON400", q, code, env.Code)
		}
	}
}

// The events API at its limits: a page full at the default count and at the
// clamp (500), on a 20-entry chunk boundary, says hasMore; the last one not.
func TestEvents_PagesAtTheirLimits(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	var ids []string
	for i := 0; i < 510; i++ {
		res, err := th.Hub.Publish(t.Context(), hub.PublishRequest{Room: 61, EventType: "comment.created", Data: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.StreamID)
	}
	tok := th.Token(t, 1)
	page := func(q string) hub.EventsPage {
		t.Helper()
		code, env := th.Get(t, "/api/v1/rooms/61/events?"+q, tok)
		var p hub.EventsPage
		testhub.Remarshal(t, env.Result, &p)
		if code != 200 {
			t.Fatalf("%s: %d %+v", q, code, env)
		}
		return p
	}
	if p := page("since=0"); len(p.Events) != 100 || !p.HasMore || *p.LastID != ids[99] {
		t.Fatalf("default count: %d events, hasMore %v", len(p.Events), p.HasMore)
	}
	p := page("since=0&count=100000")
	if len(p.Events) != 500 || !p.HasMore || *p.LastID != ids[499] {
		t.Fatalf("count clamped to 500: %d events, hasMore %v", len(p.Events), p.HasMore)
	}
	if p = page("since=" + *p.LastID + "&count=500"); len(p.Events) != 10 || p.HasMore || *p.LastID != ids[509] {
		t.Fatalf("the last page: %d events, hasMore %v", len(p.Events), p.HasMore)
	}
	if p = page("since=" + ids[489] + "&count=20"); len(p.Events) != 20 || p.HasMore {
		t.Fatalf("a page that ends with history: %d events, hasMore %v", len(p.Events), p.HasMore)
	}
}
