package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

func TestPlatform_ErrorsAreJSON(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	key := map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey}
	big := `{"roomId":1,"eventType":"comment.created","data":{"x":"` + strings.Repeat("a", 70000) + `"}}`
	for _, tc := range []struct {
		name, method, path string
		hdr                map[string]string
		body               string
		status             int
		code               string
	}{
		{"unknown route", "GET", "/nope", nil, "", 404, "COMMON404"},
		{"unknown api route", "GET", "/api/v1/rooms/1/nothing", nil, "", 404, "COMMON404"},
		{"wrong method", "DELETE", "/health", nil, "", 405, "COMMON400"},
		{"no auth", "GET", "/api/v1/rooms/1/events?since=0", nil, "", 401, "AUTH4001"},
		{"no internal key", "POST", "/api/v1/notifications/publish", nil, `{}`, 401, "AUTH4001"},
		{"too large", "POST", "/api/v1/notifications/publish", key, big, 413, "COMMON413"},
		{"bad json", "POST", "/api/v1/notifications/publish", key, `{`, 400, "COMMON400"},
		{"unknown type", "POST", "/api/v1/notifications/publish", key, `{"roomId":1,"eventType":"nope","data":{}}`, 400, "NOTIF4001"},
		{"reserved type", "POST", "/api/v1/notifications/publish", key, `{"roomId":1,"eventType":"presence.update","data":{}}`, 400, "NOTIF4001"},
		{"system type", "POST", "/api/v1/notifications/publish", key, `{"roomId":1,"eventType":"system.gap","data":{}}`, 400, "NOTIF4001"},
		{"bad idempotency key", "POST", "/api/v1/notifications/publish", key, `{"roomId":1,"eventType":"comment.created","data":{},"idempotencyKey":"a\nb"}`, 400, "COMMON400"},
		{"dev token without user", "GET", "/dev/token", nil, "", 400, "COMMON400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, env := th.Do(t, tc.method, tc.path, tc.hdr, tc.body)
			if code != tc.status || env.Code != tc.code || env.IsSuccess || env.Result != nil || env.Message == "" {
				t.Fatalf("got %d %+v, want %d %s", code, env, tc.status, tc.code)
			}
		})
	}
}

func TestPlatform_RoomIDValidation(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	tok := th.Token(t, 1)
	for _, id := range []string{"0", "-1", "abc", "1.5", "99999999999999999999", "%201"} {
		code, env := th.Get(t, "/api/v1/rooms/"+id+"/events?since=0", tok)
		if code != 400 || env.Code != "COMMON400" {
			t.Errorf("roomId %q: %d %s, want 400 COMMON400", id, code, env.Code)
		}
	}
}

func TestPlatform_HealthAndMetrics(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	code, env := th.Get(t, "/health", "")
	res, _ := env.Result.(map[string]any)
	if code != 200 || env.Code != "COMMON200" || res["status"] != "healthy" || res["redisConnected"] != true {
		t.Fatalf("health: %d %+v", code, env)
	}
	for _, k := range []string{"activeConnections", "activeRooms", "uptimeSecs"} {
		if _, ok := res[k]; !ok {
			t.Errorf("health result lacks %s", k)
		}
	}
	resp, err := http.Get(th.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{
		"sse_active_connections", "sse_active_rooms", `events_published_total{event_type="comment.created"}`,
		"events_delivered_total", "events_lagged_total", "pubsub_reconnect_total", "presence_heartbeat_total",
		"write_behind_flush_total", "write_behind_flush_entries", `lock_acquire_total{result="acquired"}`,
		"redis_command_duration_seconds", "http_requests_total", "http_request_duration_seconds",
	} {
		if !strings.Contains(string(b), name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}
