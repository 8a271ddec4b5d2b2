package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"roomhub/api/client"
	"roomhub/hub"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

func internalGet(t *testing.T, th *testhub.Hub, path string, out any) {
	t.Helper()
	code, env := th.Do(t, http.MethodGet, path, map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey}, "")
	if code != 200 {
		t.Fatalf("GET %s: %d %+v", path, code, env)
	}
	testhub.Remarshal(t, env.Result, out)
}

// The overview, read from either of two instances on one Redis, counts
// both: each instance with its open streams and rooms, the publishes of a
// second, the deliveries by state, the dead deliveries and ingest entries.
func TestOverview_TheFleetAtAGlance(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	g := testhub.StartGateway(t, func(testhub.GatewayCall) testhub.GatewayAnswer {
		return testhub.GatewayAnswer{Status: 400, Body: `{"errorCode":"INVALID_ARGUMENT"}`}
	})
	cfg := testhub.DeliveryConfig(g, `{"comment.created":{"push":{}}}`, testhub.WithIngest(1))
	a := testhub.Start(t, rs.Addr(), cfg)
	b := testhub.Start(t, rs.Addr(), cfg)
	s := a.OpenStream(t, 42, 7, "")
	defer s.Close()
	nid := a.NotifyWith(t, 43, "", 8, 9)
	a.WaitDelivery(t, nid, 8, "push", "dead")
	a.WaitDelivery(t, nid, 9, "push", "dead")
	testhub.XAdd(t, a.Redis, 0, "event", "not json")

	var o client.Overview
	testhub.Eventually(t, testhub.Wait, "the overview counts both instances, the stream, the dead and a publish rate", func() bool {
		a.Publish(t, 44, "comment.created", map[string]any{})
		internalGet(t, b, "/api/v1/internal/overview", &o)
		return len(o.Instances) == 2 && o.Connections == 1 && o.Dead.Deliveries == 2 && o.Dead.Ingest == 1 &&
			o.Deliveries["dead"] == 2 && o.Deliveries["scheduled"] == 2 && o.PublishesPerSec > 0
	})
	ids := map[string]bool{a.Hub.InstanceID(): true, b.Hub.InstanceID(): true}
	for _, in := range o.Instances {
		if !ids[in.ID] || in.StartedAt == "" {
			t.Fatalf("instance %+v is not one of %v", in, ids)
		}
		if want := map[bool]int64{true: 1, false: 0}[in.ID == a.Hub.InstanceID()]; in.Connections != want || in.Rooms != want {
			t.Fatalf("instance %+v: want %d connection and room", in, want)
		}
	}
	if o.FanoutsRunning != 0 || o.IngestLag != 0 {
		t.Fatalf("nothing runs: %+v", o)
	}
}

// A person's page answers "why did they not get it": online or not (a
// stream on any instance), inbox counts, topics, and the latest deliveries
// newest first with their error codes.
func TestUsers_WhyDidTheyNotGetIt(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	g := testhub.StartGateway(t, func(c testhub.GatewayCall) testhub.GatewayAnswer {
		return testhub.GatewayAnswer{Status: 400, Body: `{"errorCode":"UNREGISTERED"}`}
	})
	cfg := testhub.DeliveryConfig(g, `{"comment.created":{"push":{}}}`)
	a := testhub.Start(t, rs.Addr(), cfg)
	b := testhub.Start(t, rs.Addr(), cfg)
	first := a.NotifyWith(t, 42, "", 8)
	a.WaitDelivery(t, first, 8, "push", "dead")
	second := a.NotifyWith(t, 42, "", 8)
	a.WaitDelivery(t, second, 8, "push", "dead")
	if code, env := a.Do(t, http.MethodPut, "/api/v1/internal/topics/product:1/followers",
		map[string]string{"X-Internal-Key": a.Cfg.InternalAPIKey}, `{"userIds":[8]}`); code != 200 {
		t.Fatalf("follow: %d %+v", code, env)
	}
	s := b.OpenStream(t, 42, 8, "")
	var p struct {
		UserID           int64           `json:"userId"`
		Online           bool            `json:"online"`
		Streams          int             `json:"streams"`
		Devices          []any           `json:"devices"`
		Counts           map[string]any  `json:"counts"`
		Topics           int64           `json:"topics"`
		RecentDeliveries []deliveryShown `json:"recentDeliveries"`
	}
	internalGet(t, a, "/api/v1/internal/users/8", &p) // the stream is on b
	if p.UserID != 8 || !p.Online || p.Streams != 1 || p.Topics != 1 || p.Counts["unread"] != 2.0 || p.Devices == nil {
		t.Fatalf("user 8: %+v", p)
	}
	if len(p.RecentDeliveries) != 2 || p.RecentDeliveries[0].NotificationID != second || p.RecentDeliveries[1].NotificationID != first ||
		p.RecentDeliveries[0].State != "dead" || p.RecentDeliveries[0].LastErrorCode != "UNREGISTERED" {
		t.Fatalf("recent deliveries, newest first: %+v", p.RecentDeliveries)
	}
	s.Close()
	testhub.Eventually(t, testhub.Wait, "offline once the stream closed", func() bool {
		internalGet(t, a, "/api/v1/internal/users/8", &p)
		return !p.Online && p.Streams == 0
	})
	internalGet(t, a, "/api/v1/internal/users/9", &p)
	if p.Online || p.Topics != 0 || len(p.RecentDeliveries) != 0 || p.Counts["unread"] != 0.0 {
		t.Fatalf("a person the hub never saw: %+v", p)
	}
	for path, want := range map[string]int{"/api/v1/internal/users/0": 400, "/api/v1/internal/users/x": 400} {
		if code, _ := a.Do(t, http.MethodGet, path, map[string]string{"X-Internal-Key": a.Cfg.InternalAPIKey}, ""); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
	for _, path := range []string{"/api/v1/internal/users/8", "/api/v1/internal/overview"} {
		if code, _ := a.Do(t, http.MethodGet, path, nil, ""); code != 401 {
			t.Errorf("GET %s without the key: %d, want 401", path, code)
		}
	}
}

type deliveryShown struct {
	NotificationID string `json:"notificationId"`
	State          string `json:"state"`
	LastErrorCode  string `json:"lastErrorCode"`
}

// A notification's deliveries come with its room event and, when it went
// to a topic's followers, its fan-out; the running fan-outs are listed.
func TestNotificationDeliveries_WithTheEventAndTheFanout(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	key := map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey}
	nid := th.NotifyWith(t, 42, "", 8)
	var got struct {
		Deliveries []any `json:"deliveries"`
		Event      *struct {
			ID        string          `json:"id"`
			EventType string          `json:"eventType"`
			Data      json.RawMessage `json:"data"`
		} `json:"event"`
		Fanout *struct {
			TopicKey string `json:"topicKey"`
			State    string `json:"state"`
		} `json:"fanout"`
	}
	internalGet(t, th, "/api/v1/internal/notifications/"+nid+"/deliveries", &got)
	if got.Event == nil || fmt.Sprintf("42:%s", got.Event.ID) != nid || got.Event.EventType != "comment.created" || got.Fanout != nil {
		t.Fatalf("a notification without a topic: %+v", got)
	}
	if code, env := th.Do(t, http.MethodPut, "/api/v1/internal/topics/product:1/followers", key, `{"userIds":[1,2,3]}`); code != 200 {
		t.Fatalf("follow: %d %+v", code, env)
	}
	code, env := th.PublishRaw(t, `{"roomId":42,"eventType":"comment.created","data":{},"topic":"product:1"}`)
	if code != 200 {
		t.Fatalf("publish to a topic: %d %+v", code, env)
	}
	tid := env.Result.(map[string]any)["fanout"].(map[string]any)["id"].(string)
	internalGet(t, th, "/api/v1/internal/notifications/"+tid+"/deliveries", &got)
	if got.Fanout == nil || got.Fanout.TopicKey != "product:1" {
		t.Fatalf("a topic's notification: %+v", got)
	}
	var running struct {
		Fanouts []struct{ ID string } `json:"fanouts"`
	}
	internalGet(t, th, "/api/v1/internal/fanouts?topicKey=product:2", &running)
	if len(running.Fanouts) != 0 {
		t.Fatalf("another topic's running fan-outs: %+v", running)
	}
	if code, _ := th.Do(t, http.MethodGet, "/api/v1/internal/fanouts?topicKey=%20", key, ""); code != 400 {
		t.Fatalf("a bad topic key: %d, want 400", code)
	}
}

// A stream left in a person's list by an instance that died (its lease
// over, not yet swept) does not make them online; one of a live instance
// does.
func TestUsers_AStreamOfADeadInstanceDoesNotCount(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), func(c *testhub.Configs) { c.PresenceUserTTL = 3 * time.Second }) // the registry read every second
	c := testredis.Client(t, rs.Addr())
	past, future := fmt.Sprint(time.Now().Add(-time.Minute).UnixMilli()), fmt.Sprint(time.Now().Add(time.Hour).UnixMilli())
	testredis.Do(t, c, "ZADD", hub.PresenceInstancesKey, past, "v1-dead000000000", future, "v1-alive00000000")
	testredis.Do(t, c, "ZADD", hub.UserOnlineKey(8), "+inf", "v1-dead000000000.0123456789abcdef")
	var p struct {
		Online  bool `json:"online"`
		Streams int  `json:"streams"`
	}
	testhub.Eventually(t, testhub.Wait, "the dead instance is known", func() bool {
		return strings.Contains(th.Hub.DeadInstances(), "v1-dead000000000")
	})
	if internalGet(t, th, "/api/v1/internal/users/8", &p); p.Online || p.Streams != 0 {
		t.Fatalf("a dead instance's stream counted: %+v", p)
	}
	testredis.Do(t, c, "ZADD", hub.UserOnlineKey(8), "+inf", "v1-alive00000000.0123456789abcdef")
	if internalGet(t, th, "/api/v1/internal/users/8", &p); !p.Online || p.Streams != 1 {
		t.Fatalf("a live instance's stream: %+v", p)
	}
}
