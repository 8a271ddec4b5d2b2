package testhub

import (
	"fmt"
	"net/http"
	"net/url"
	"roomhub/hub/delivery"
	"testing"
	"time"
)

// DeadPages lists every dead push delivery limit at a time, failing when
// the pages do not end within the entries there are.
func (th *Hub) DeadPages(t *testing.T, limit, entries int) []delivery.Record {
	t.Helper()
	internal := map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey}
	var seen []delivery.Record
	after := ""
	for pages := 0; ; pages++ {
		if pages > entries/limit+1 {
			t.Fatalf("dead pages of %d do not end after %d pages (%d listed)", limit, pages, len(seen))
		}
		q := fmt.Sprintf("/api/v1/internal/deliveries/dead?channel=push&limit=%d", limit)
		if after != "" {
			q += "&after=" + url.QueryEscape(after)
		}
		code, env := th.Do(t, http.MethodGet, q, internal, "")
		if code != 200 {
			t.Fatalf("%s: %d %+v", q, code, env)
		}
		var p delivery.DeadPage
		Remarshal(t, env.Result, &p)
		seen = append(seen, p.Deliveries...)
		if p.NextAfter == nil {
			return seen
		}
		after = *p.NextAfter
	}
}

// DeliveriesOf reads a notification's deliveries, by "<user>/<channel>".
func (th *Hub) DeliveriesOf(t testing.TB, nid string) map[string]delivery.Record {
	t.Helper()
	code, env := th.Do(t, http.MethodGet, "/api/v1/internal/notifications/"+url.PathEscape(nid)+"/deliveries",
		map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey}, "")
	if code != 200 {
		t.Fatalf("deliveries of %s: %d %+v", nid, code, env)
	}
	var r struct{ Deliveries []delivery.Record }
	Remarshal(t, env.Result, &r)
	out := map[string]delivery.Record{}
	for _, d := range r.Deliveries {
		out[fmt.Sprintf("%d/%s", d.UserID, d.Channel)] = d
	}
	return out
}

// WaitDelivery waits until the delivery of nid to user on ch is in state.
func (th *Hub) WaitDelivery(t testing.TB, nid string, user int64, ch, state string) delivery.Record {
	t.Helper()
	var last delivery.Record
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		last = th.DeliveriesOf(t, nid)[fmt.Sprintf("%d/%s", user, ch)]
		if last.State == state {
			return last
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("delivery of %s to %d on %s: %+v, want state %s", nid, user, ch, last, state)
	return last
}

// MarkRead sends PATCH /notifications/{id}/read.
func (th *Hub) MarkRead(t testing.TB, user int64, id string) {
	t.Helper()
	if code, env := th.UserDo(t, http.MethodPatch, "/api/v1/notifications/"+url.PathEscape(id)+"/read", user, ""); code != 200 {
		t.Fatalf("read %s: %d %+v", id, code, env)
	}
}
