package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// What the client sends and how it reads the hub's answers, against a
// stand-in hub: the internal key, the event's JSON (expiresAt in RFC 3339,
// data never null), a refusal as an *Error, an answer that is not the
// hub's JSON named so. (The live hub: api/backendclient_test.go.)
func TestClient_SendsAndReads(t *testing.T) {
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Internal-Key") != "k" {
			w.WriteHeader(401)
			_, _ = io.WriteString(w, `{"isSuccess":false,"code":"AUTH4001","message":"bad key","result":null}`)
			return
		}
		switch r.URL.Path {
		case "/api/v1/notifications/publish":
			_ = json.NewDecoder(r.Body).Decode(&got)
			_, _ = io.WriteString(w, `{"isSuccess":true,"code":"COMMON200","message":"OK","result":{"streamId":"1-0","duplicate":false,"deliveredTo":2}}`)
		default:
			_, _ = io.WriteString(w, "<html>a proxy's page</html>")
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	at := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	res, err := New(srv.URL+"/", "k").Publish(ctx, Event{RoomID: 42, EventType: "comment.created", ExpiresAt: at})
	if err != nil || res.StreamID != "1-0" || res.DeliveredTo != 2 || res.NotificationID(42) != "42:1-0" {
		t.Fatalf("publish: %+v %v", res, err)
	}
	if got["expiresAt"] != "2027-01-02T03:04:05Z" || got["data"] == nil || got["roomId"] != float64(42) {
		t.Fatalf("sent %v", got)
	}
	if _, err := New(srv.URL, "x").Publish(ctx, Event{RoomID: 1}); !IsCode(err, "AUTH4001") || err.(*Error).Temporary() {
		t.Fatalf("a wrong key: %v", err)
	}
	if _, err := New(srv.URL, "k").Deliveries(ctx, "42:1-0"); !IsCode(err, "NOT_JSON") {
		t.Fatalf("not the hub's JSON: %v", err)
	}
	if k := IngestKey(45, 0); k != "ingest:{13}" || !strings.HasPrefix(IngestKey(45, 4), "ingest:{1}") {
		t.Fatalf("IngestKey: %s", k)
	}
}
