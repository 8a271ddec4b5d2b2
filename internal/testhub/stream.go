package testhub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"roomhub/api"
	"roomhub/hub"
	"strings"
	"testing"
)

// PageStream opens GET /api/v1/stream?query as user.
func (th *Hub) PageStream(t testing.TB, user int64, query, lastEventID string) *SSEClient {
	t.Helper()
	return OpenSSE(t, th.URL+"/api/v1/stream?"+query, th.Token(t, user), lastEventID)
}

// Pub publishes comment.created {"k":k} to room.
func (th *Hub) Pub(t testing.TB, room int64, k string) string {
	t.Helper()
	return th.Publish(t, room, "comment.created", map[string]any{"k": k}).StreamID
}

// PresenceList reads GET /rooms/{room}/presence.
func (th *Hub) PresenceList(t *testing.T, room int64) hub.PresenceList {
	t.Helper()
	code, env := th.Get(t, fmt.Sprintf("/api/v1/rooms/%d/presence", room), th.Token(t, 1))
	if code != 200 {
		t.Fatalf("GET presence: %d %+v", code, env)
	}
	var l hub.PresenceList
	Remarshal(t, env.Result, &l)
	return l
}

// ActiveStreams reads the hub's open streams from /health.
func (th *Hub) ActiveStreams(t *testing.T) int {
	t.Helper()
	_, env := th.Get(t, "/health", "")
	return int(env.Result.(map[string]any)["activeConnections"].(float64))
}

// TicketOf asks for a stream ticket with token.
func (th *Hub) TicketOf(t *testing.T, token string) string {
	t.Helper()
	code, env := th.Do(t, http.MethodPost, "/api/v1/stream-tickets", map[string]string{"Authorization": "Bearer " + token}, "")
	if code != 200 {
		t.Fatalf("stream-tickets: %d %+v", code, env)
	}
	r := env.Result.(map[string]any)
	if r["expiresInSecs"] != float64(30) || len(r["ticket"].(string)) < 32 {
		t.Fatalf("stream-tickets: %+v", r)
	}
	return r["ticket"].(string)
}

// TryRoute calls one route with token and returns the status and the code of
// its JSON answer; a stream that opens (200) is closed at once.
func (th *Hub) TryRoute(t testing.TB, method, path, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, th.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := HTTPClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if strings.HasSuffix(path, "/stream") && resp.StatusCode == 200 {
		return 200, "COMMON200"
	}
	var env api.Envelope
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("%s %s: %d %q is not JSON", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, env.Code
}
