package client

import (
	"context"
	"encoding/json"
	"errors"
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

// A redirect is never followed, with the default HTTP client or one of the
// backend's own: the internal key and the body stay home, and the error
// names where it pointed (hardening V, 5). A 429 and a 5xx are temporary,
// other refusals not (hardening V, 11).
func TestClient_RefusesRedirectsAndSaysWhatIsTemporary(t *testing.T) {
	var reached []string
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = append(reached, r.Header.Get("X-Internal-Key"))
		_, _ = io.WriteString(w, `{"isSuccess":true,"code":"COMMON200","message":"OK","result":{"streamId":"1-0"}}`)
	}))
	defer elsewhere.Close()
	status := 307
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status >= 400 {
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"isSuccess":false,"code":"X","message":"no","result":null}`)
			return
		}
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, status)
	}))
	defer srv.Close()
	for _, c := range []*Client{New(srv.URL, "secret-key"), New(srv.URL, "secret-key", WithHTTPClient(&http.Client{}))} {
		for _, status = range []int{301, 302, 307, 308} {
			_, err := c.Publish(context.Background(), Event{RoomID: 1, EventType: "a"})
			var e *Error
			if !errors.As(err, &e) || e.Status != status || e.Code != "REDIRECT" || !strings.Contains(e.Message, elsewhere.URL) || e.Temporary() {
				t.Fatalf("a %d: %v, want a REDIRECT error naming %s", status, err, elsewhere.URL)
			}
		}
	}
	if len(reached) != 0 {
		t.Fatalf("the redirect's target was called %d times (keys %q)", len(reached), reached)
	}
	for st, want := range map[int]bool{429: true, 500: true, 503: true, 400: false, 401: false, 409: false, 413: false} {
		status = st
		_, err := New(srv.URL, "k").Publish(context.Background(), Event{RoomID: 1, EventType: "a"})
		var e *Error
		if !errors.As(err, &e) || e.Temporary() != want {
			t.Errorf("a %d: %v, Temporary want %v", st, err, want)
		}
	}
}

// xadds records what reaches Redis.
type xadds []string

func (x *xadds) XAdd(_ context.Context, key string, _ int64, _ []string) (string, error) {
	*x = append(*x, key)
	return "1-0", nil
}

// An event the hub would refuse for its size never reaches Redis: data
// over PUBLISH_MAX_BYTES, or an entry over it and 256 KiB (hardening V, 14).
func TestIngest_RefusesOversizedEventsAtTheSource(t *testing.T) {
	var sent xadds
	in := NewIngest(&sent, 4)
	ctx := context.Background()
	if _, err := in.Publish(ctx, Event{RoomID: 5, EventType: "a", Data: map[string]string{"t": strings.Repeat("x", 60<<10)}}); err != nil {
		t.Fatalf("an event within the bounds: %v", err)
	}
	if _, err := in.Publish(ctx, Event{RoomID: 5, EventType: "a", Data: map[string]string{"t": strings.Repeat("x", 64<<10)}}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("data over 64 KiB: %v, want ErrTooLarge", err)
	}
	many := make([]int64, 60_000)
	for i := range many {
		many[i] = int64(1_000_000 + i)
	}
	if _, err := in.Publish(ctx, Event{RoomID: 5, EventType: "a", Data: map[string]int{}, RecipientIDs: many}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("an entry over 320 KiB: %v, want ErrTooLarge", err)
	}
	in.MaxBytes = 1 << 20 // a hub with PUBLISH_MAX_BYTES=1048576
	if _, err := in.Publish(ctx, Event{RoomID: 5, EventType: "a", Data: map[string]string{"t": strings.Repeat("x", 64<<10)}}); err != nil {
		t.Fatalf("64 KiB under a 1 MiB PUBLISH_MAX_BYTES: %v", err)
	}
	if len(sent) != 2 {
		t.Fatalf("%d XADDs, want the two events within the bounds", len(sent))
	}
}

// A batch's refused entry carries the status its code has alone: a
// REDIS5001 inside a 200 is temporary, a COMMON400 not (issue 57, 6).
func TestClient_BatchEntriesCarryTheirCodesStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"isSuccess":true,"code":"COMMON200","message":"OK","result":{"results":[
			{"isSuccess":false,"code":"REDIS5001","message":"Redis is unreachable"},
			{"isSuccess":false,"code":"COMMON400","message":"bad"},
			{"isSuccess":false,"code":"NOTIF4091","message":"reused"},
			{"isSuccess":false,"code":"COMMON413","message":"large"},
			{"isSuccess":true,"result":{"streamId":"1-0"}}]}}`)
	}))
	defer srv.Close()
	res, err := New(srv.URL, "k").PublishBatch(context.Background(), make([]Event, 5))
	if err != nil || len(res) != 5 {
		t.Fatalf("%v %v", res, err)
	}
	for i, want := range []struct {
		status    int
		temporary bool
	}{{503, true}, {400, false}, {409, false}, {413, false}} {
		if e := res[i].Err; e == nil || e.Status != want.status || e.Temporary() != want.temporary {
			t.Errorf("entry %d: %+v, want %d (temporary %v)", i, e, want.status, want.temporary)
		}
	}
	if res[4].Err != nil || res[4].Result.StreamID != "1-0" {
		t.Errorf("the published entry: %+v", res[4])
	}
}
