package testhub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"roomhub/api"
	"roomhub/hub"
	"roomhub/hub/delivery"
	"roomhub/hub/inbox"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// InboxOf reads a user's whole inbox through the API, newest first.
func (th *Hub) InboxOf(t testing.TB, user int64) []inbox.Notification {
	t.Helper()
	return th.ListOf(t, user, "")
}

// UnreadOf reads a user's unread count through the API.
func (th *Hub) UnreadOf(t testing.TB, user int64) int64 {
	t.Helper()
	code, env := th.Get(t, "/api/v1/notifications/unread", th.Token(t, user))
	var r struct{ Count int64 }
	Remarshal(t, env.Result, &r)
	if code != 200 {
		t.Fatalf("unread: %d %+v", code, env)
	}
	return r.Count
}

// UserDo sends a request as user.
func (th *Hub) UserDo(t testing.TB, method, path string, user int64, body string) (int, api.Envelope) {
	t.Helper()
	return th.Do(t, method, path, map[string]string{"Authorization": "Bearer " + th.Token(t, user),
		"Content-Type": "application/json"}, body)
}

// Notify publishes one comment-like event of typ to recipients in room.
func (th *Hub) Notify(t testing.TB, room int64, typ string, recipients ...int64) hub.PublishResult {
	t.Helper()
	return th.NotifyExtra(t, room, typ, "", recipients...)
}

// NotifyExtra is Notify with extra publish fields (JSON members, or "").
func (th *Hub) NotifyExtra(t testing.TB, room int64, typ, extra string, recipients ...int64) hub.PublishResult {
	t.Helper()
	ids, _ := json.Marshal(recipients)
	// The defaults unless the extra says its own: a field named twice is refused.
	defaults := ""
	for _, d := range []string{`"data":{"k":1},`, `"publisherId":5,`} {
		if name, _, _ := strings.Cut(d, ":"); !strings.Contains(extra, name+":") {
			defaults += d
		}
	}
	if extra != "" {
		extra = "," + extra
	}
	code, env := th.PublishRaw(t, fmt.Sprintf(`{"roomId":%d,"eventType":%q,%s"recipientIds":%s%s}`, room, typ, defaults, ids, extra))
	if code != 200 {
		t.Fatalf("publish with recipients: %d %+v", code, env)
	}
	var r hub.PublishResult
	Remarshal(t, env.Result, &r)
	return r
}

// NotifyWith publishes one event to recipients with extra publish fields
// (JSON members, e.g. `"severity":"high"`) and returns the notificationId.
func (th *Hub) NotifyWith(t testing.TB, room int64, extra string, recipients ...int64) string {
	t.Helper()
	r := th.NotifyExtra(t, room, "comment.created", extra, recipients...)
	return fmt.Sprintf("%d:%s", room, r.StreamID)
}

// CountsOf reads GET /notifications/counts.
func (th *Hub) CountsOf(t testing.TB, user int64) Counts {
	t.Helper()
	code, env := th.Get(t, "/api/v1/notifications/counts", th.Token(t, user))
	if code != 200 {
		t.Fatalf("counts: %d %+v", code, env)
	}
	var c Counts
	Remarshal(t, env.Result, &c)
	return c
}

// ListOf reads every item of the user's inbox that passes the query's
// filter, page by page (pages of 7: paging within the filter is tested too).
func (th *Hub) ListOf(t testing.TB, user int64, query string) []inbox.Notification {
	t.Helper()
	var all []inbox.Notification
	before := ""
	for pages := 0; ; pages++ {
		q := "/api/v1/notifications?limit=7&" + query
		if before != "" {
			q += "&before=" + url.QueryEscape(before)
		}
		code, env := th.Get(t, q, th.Token(t, user))
		if code != 200 {
			t.Fatalf("GET %s: %d %+v", q, code, env)
		}
		var p inbox.InboxPage
		Remarshal(t, env.Result, &p)
		all = append(all, p.Notifications...)
		if !p.HasMore {
			return all
		}
		if pages > 1000 || p.NextBefore == nil {
			t.Fatalf("paging %s does not end", query)
		}
		before = *p.NextBefore
	}
}

// Act sends PATCH /notifications/{id}/{action} and returns the item.
func (th *Hub) Act(t testing.TB, user int64, id, action, body string) inbox.Notification {
	t.Helper()
	code, env := th.UserDo(t, http.MethodPatch, "/api/v1/notifications/"+url.PathEscape(id)+"/"+action, user, body)
	if code != 200 {
		t.Fatalf("%s %s: %d %+v", action, id, code, env)
	}
	var r struct{ Notification inbox.Notification }
	Remarshal(t, env.Result, &r)
	if r.Notification.NotificationID != id {
		t.Fatalf("%s %s answered %+v", action, id, r)
	}
	return r.Notification
}

// ReadEach marks each of user's notifications read, one PATCH each, and
// returns the sink keys they should arrive as.
func (th *Hub) ReadEach(t testing.TB, user int64) []string {
	t.Helper()
	var keys []string
	for _, n := range th.InboxOf(t, user) {
		if code, _ := th.UserDo(t, http.MethodPatch, "/api/v1/notifications/"+n.NotificationID+"/read", user, ""); code != 200 {
			t.Fatalf("read %s: %d", n.NotificationID, code)
		}
		keys = append(keys, fmt.Sprintf("%d/%s", user, n.NotificationID))
	}
	return keys
}

// FillInbox publishes n notifications to user through batches, newest last,
// and returns their ids, newest first (the list's order).
func (th *Hub) FillInbox(t *testing.T, user int64, n int) []string {
	t.Helper()
	var ids []string
	for done := 0; done < n; {
		var events []string
		for ; done < n && len(events) < api.MaxBatch/10; done++ { // 50 a request (one room: one at a time), each well within the client's 30 s on a loaded machine
			events = append(events, fmt.Sprintf(`{"roomId":900,"eventType":"comment.created","data":{"n":%d},"recipientIds":[%d]}`, done, user))
		}
		code, res := th.Batch(t, events...)
		if code != 200 {
			t.Fatalf("batch: %d", code)
		}
		for _, r := range res {
			if !r.IsSuccess {
				t.Fatalf("a batch event: %+v", r)
			}
			ids = append([]string{"900:" + r.Result.StreamID}, ids...)
		}
	}
	return ids
}

// BulkUntilDone repeats one bulk call while it answers more, and returns how
// many it changed and how many calls it took; each call changes at most
// inbox.MaxBulkLook items.
func (th *Hub) BulkUntilDone(t *testing.T, user int64, path, body string) (changed int64, calls int) {
	t.Helper()
	for calls = 1; ; calls++ {
		if calls > 20 {
			t.Fatalf("%s %s: still more after 20 calls (%d changed): the calls make no progress", path, body, changed)
		}
		code, env := th.UserDo(t, http.MethodPost, path, user, body)
		if code != 200 {
			t.Fatalf("%s %s: %d %+v", path, body, code, env)
		}
		var r struct {
			Changed, Marked int64
			More            bool
		}
		Remarshal(t, env.Result, &r)
		n := r.Changed + r.Marked
		if n > inbox.MaxBulkLook {
			t.Fatalf("%s %s: one call changed %d items, more than %d", path, body, n, inbox.MaxBulkLook)
		}
		changed += n
		if !r.More {
			return changed, calls
		}
	}
}

// UserStream opens the user's own notification stream.
func (th *Hub) UserStream(t testing.TB, user int64, lastEventID string) *SSEClient {
	t.Helper()
	return OpenSSE(t, th.URL+"/api/v1/notifications/stream", th.Token(t, user), lastEventID)
}

// SettledUserStream opens the user's stream and reads past its opening: the
// first event and the counts.
func (th *Hub) SettledUserStream(t testing.TB, user int64) *SSEClient {
	t.Helper()
	s := th.UserStream(t, user, "")
	s.Next(t, Wait)
	s.NextCounts(t)
	return s
}

// SettingsOf reads GET /notifications/settings.
func (th *Hub) SettingsOf(t testing.TB, user int64) Settings {
	t.Helper()
	code, env := th.UserDo(t, http.MethodGet, "/api/v1/notifications/settings", user, "")
	if code != 200 {
		t.Fatalf("GET settings: %d %+v", code, env)
	}
	var s Settings
	Remarshal(t, env.Result, &s)
	return s
}

// CreatedData is the data of a notification.created event.
type CreatedData struct {
	inbox.Notification
	Unread int64 `json:"unread"`
}

// ReadData is the data of a notification.read event.
type ReadData struct {
	NotificationIDs []string `json:"notificationIds"`
	ReadAt          string   `json:"readAt"`
	Unread          int64    `json:"unread"`
}

// DecodeFrame is f's data as a T; f must be an event of type typ.
func DecodeFrame[T any](t testing.TB, f Frame, typ string) T {
	t.Helper()
	var v T
	if f.Event != typ {
		t.Fatalf("got %+v, want %s", f, typ)
	}
	if err := json.Unmarshal([]byte(f.Data), &v); err != nil {
		t.Fatalf("%s data %s: %v", typ, f.Data, err)
	}
	return v
}

// Counts is the counts as the inbox events carry them.
type Counts struct {
	Version                                    int64
	Visible, Unread, Unseen, Archived, Snoozed int64
	ByTag, BySeverity                          map[string]struct{ Visible, Unread, Unseen int64 }
}

// NextCounts reads the notification.counts frame that follows
// notification.unread when a stream with the user's notifications opens.
func (c *SSEClient) NextCounts(t testing.TB) Counts {
	t.Helper()
	f := c.Next(t, Wait)
	if f.Event != inbox.NotificationCountsType || f.ID != "" {
		t.Fatalf("got %+v, want notification.counts without id", f)
	}
	var n Counts
	if err := json.Unmarshal([]byte(f.Data), &n); err != nil || n.Version == 0 {
		t.Fatalf("notification.counts %s: %v", f.Data, err)
	}
	return n
}

// Settings is what GET /notifications/settings answers.
type Settings struct {
	MutedEventTypes []string                         `json:"mutedEventTypes"`
	Channels        map[string]delivery.ChannelPrefs `json:"channels"`
	QuietHours      *delivery.QuietHours             `json:"quietHours"`
}

// ReadSink is a real HTTP sink server: it records the reads it accepts and
// answers with status (200 unless set).
type ReadSink struct {
	URL    string
	Status atomic.Int32 // what it answers
	Mu     sync.Mutex
	Got    map[string]int // userId/notificationId → times accepted, under Mu
	Reqs   atomic.Int32   // requests seen
	BadKey atomic.Int32   // requests without the internal key
}

// StartSink starts a sink that expects key in X-Internal-Key.
func StartSink(t testing.TB, key string) *ReadSink {
	s := &ReadSink{Got: map[string]int{}}
	s.Status.Store(200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Reqs.Add(1)
		if r.Header.Get("X-Internal-Key") != key {
			s.BadKey.Add(1)
		}
		var body struct{ Reads []inbox.Read }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			w.WriteHeader(400)
			return
		}
		st := int(s.Status.Load())
		if st == 200 {
			s.Mu.Lock()
			for _, rd := range body.Reads {
				if rd.ReadAt == "" {
					st = 400
				}
				s.Got[fmt.Sprintf("%d/%s", rd.UserID, rd.NotificationID)]++
			}
			s.Mu.Unlock()
		}
		w.WriteHeader(st)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Accepted returns the sorted reads accepted, and fails on any accepted twice.
func (s *ReadSink) Accepted(t testing.TB) []string {
	t.Helper()
	s.Mu.Lock()
	defer s.Mu.Unlock()
	var out []string
	for k, n := range s.Got {
		if n != 1 {
			t.Errorf("read %s reached the sink %d times", k, n)
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// AgeInbox moves every item of user's inbox to the time ago, as if that much
// time had passed since their last activity: in the inbox's order, kept in
// inbox:order or, while the inbox is small, in the items (lua/inbox_order.lua).
func AgeInbox(t testing.TB, rdb rueidis.Client, user int64, ago time.Duration) {
	t.Helper()
	score := time.Now().Add(-ago).UnixMilli() * 1024
	items, err := rdb.Do(context.Background(), rdb.B().Hgetall().Key(inbox.ItemsKey(user)).Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	for id, value := range items {
		if rest := strings.TrimLeft(value, "-0123456789"); rest != value {
			// a small inbox's item keeps its score as the difference from its id's time
			_, sid, _, _ := inbox.ParseNotificationID(id)
			off := strconv.FormatInt(score-int64(sid.Ms)*1024, 10)
			err = rdb.Do(context.Background(), rdb.B().Hset().Key(inbox.ItemsKey(user)).FieldValue().FieldValue(id, off+rest).Build()).Error()
		} else {
			err = rdb.Do(context.Background(), rdb.B().Zadd().Key(inbox.OrderKey(user)).ScoreMember().ScoreMember(float64(time.Now().Add(-ago).UnixMilli()*1024), id).Build()).Error()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
