package inbox_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"

	"github.com/redis/rueidis"
)

func TestInbox_RecipientsGetItOnceOthersNothing(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	res := th.Notify(t, 70, "comment.created", 3, 8, 3)
	for _, u := range []int64{3, 8} {
		if n := th.UnreadOf(t, u); n != 1 {
			t.Fatalf("user %d unread = %d, want 1", u, n)
		}
	}
	if n := th.UnreadOf(t, 9); n != 0 {
		t.Fatalf("a non-recipient's unread = %d", n)
	}
	list := th.InboxOf(t, 3)
	if len(list) != 1 {
		t.Fatalf("inbox %+v", list)
	}
	n := list[0]
	if n.NotificationID != "70:"+res.StreamID || n.RoomID != 70 || n.EventType != "comment.created" ||
		string(n.Data) != `{"k":1}` || n.PublisherID == nil || *n.PublisherID != "5" || n.Timestamp == "" || n.ReadAt != nil {
		t.Fatalf("inbox item %+v", n)
	}
	// Too many recipients, or bad ones, are refused before anything happens.
	many := make([]string, inbox.MaxRecipients+1)
	for i := range many {
		many[i] = fmt.Sprint(i + 1)
	}
	for _, ids := range []string{"[" + strings.Join(many, ",") + "]", "[0]", "[-1]", `["x"]`, "[1.5]"} {
		code, env := th.PublishRaw(t, `{"roomId":70,"eventType":"comment.created","data":{},"recipientIds":`+ids+`}`)
		if code != 400 || env.Code != "COMMON400" {
			t.Errorf("recipientIds %.20s: %d %s, want 400 COMMON400", ids, code, env.Code)
		}
	}
}

func TestInbox_DuplicatePublishCountsOnce(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	body := `{"roomId":71,"eventType":"like.toggled","data":{},"idempotencyKey":"once","recipientIds":[4]}`
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, th.URL+"/api/v1/notifications/publish", strings.NewReader(body))
			req.Header.Set("X-Internal-Key", th.Cfg.InternalAPIKey)
			if resp, err := testhub.HTTPClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	th.PublishRaw(t, body)
	if n := th.UnreadOf(t, 4); n != 1 {
		t.Fatalf("unread after 6 publishes of one key = %d, want 1", n)
	}
	if l := th.InboxOf(t, 4); len(l) != 1 {
		t.Fatalf("inbox holds %d entries, want 1", len(l))
	}
}

// A hub that dies between the room publish and the inbox writes: the outbox
// entry written with the event lets a retry (same key) or the sweep on another
// instance finish them, exactly once.
func TestInbox_InterruptedPublishIsFinished(t *testing.T) {
	rs := testredis.Start(t)
	refuseInboxes(t, true, testredis.Client(t, rs.Addr()))
	dying := testhub.Start(t, rs.Addr(), func(c *testhub.Configs) { c.RedisURL = dyingURL(false, rs.Addr()) })
	other := testhub.Start(t, rs.Addr(), func(c *testhub.Configs) { c.Inbox.OutboxGrace = 300 * time.Millisecond })

	body := `{"roomId":72,"eventType":"comment.created","data":{"n":1},"idempotencyKey":"k1","recipientIds":[5,6]}`
	if code, _ := dying.PublishRaw(t, body); code != 500 {
		t.Fatalf("publish through the dying hub answered %d, want 500", code)
	}
	// The backend retries on another instance: the event is a duplicate, the
	// inbox writes are done now.
	code, env := other.PublishRaw(t, body)
	var r hub.PublishResult
	testhub.Remarshal(t, env.Result, &r)
	if code != 200 || !r.Duplicate {
		t.Fatalf("retry: %d %+v", code, env)
	}
	for _, u := range []int64{5, 6} {
		if n := other.UnreadOf(t, u); n != 1 {
			t.Fatalf("user %d unread = %d after the retry, want 1", u, n)
		}
	}
	// Without a retry (and without a key) the sweep finishes it.
	if code, _ := dying.PublishRaw(t, `{"roomId":73,"eventType":"comment.created","data":{},"recipientIds":[5]}`); code != 500 {
		t.Fatalf("second publish through the dying hub answered %d", code)
	}
	testhub.Eventually(t, 10*time.Second, "the sweep finished the inbox write", func() bool { return other.UnreadOf(t, 5) == 2 })
	testhub.Eventually(t, 10*time.Second, "the outbox is empty", func() bool {
		n, _ := testredis.Do(t, other.Redis, "EXISTS", hub.OutboxKey(72), hub.OutboxKey(73)).AsInt64()
		return n == 0
	})
	if n := other.UnreadOf(t, 6); n != 1 {
		t.Fatalf("user 6 unread = %d, want 1", n)
	}
}

// The id's colon may come escaped, as encodeURIComponent (the SDK) sends it.
func TestInbox_ReadWithAnEscapedID(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	id := "75%3A" + th.Notify(t, 75, "comment.created", 7).StreamID
	if code, env := th.UserDo(t, http.MethodPatch, "/api/v1/notifications/"+id+"/read", 7, ""); code != 200 {
		t.Fatalf("read with an escaped id: %d %+v", code, env)
	}
	if n := th.UnreadOf(t, 7); n != 0 {
		t.Fatalf("unread after the escaped read = %d, want 0", n)
	}
}

func TestInbox_Reads(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	var ids []string
	for i := 0; i < 4; i++ {
		ids = append(ids, "74:"+th.Notify(t, 74, "comment.created", 7).StreamID)
	}
	path := func(id string) string { return "/api/v1/notifications/" + id + "/read" }
	code, env := th.UserDo(t, http.MethodPatch, path(ids[0]), 7, "")
	var first inbox.ReadResult
	testhub.Remarshal(t, env.Result, &first)
	if code != 200 || first.NotificationID != ids[0] || first.ReadAt == "" {
		t.Fatalf("read: %d %+v", code, env)
	}
	code, env = th.UserDo(t, http.MethodPatch, path(ids[0]), 7, "")
	var again inbox.ReadResult
	testhub.Remarshal(t, env.Result, &again)
	if code != 200 || again.ReadAt != first.ReadAt {
		t.Fatalf("read again: %d %+v, want the first readAt %s", code, env, first.ReadAt)
	}
	if n := th.UnreadOf(t, 7); n != 3 {
		t.Fatalf("unread after reading one twice = %d, want 3", n)
	}
	for _, c := range []struct {
		user int64
		id   string
		code int
	}{{8, ids[1], 404}, {7, "74:1-1", 404}, {7, "99:" + strings.Split(ids[1], ":")[1], 404}, {7, "nope", 400}, {7, "74", 400}, {7, "0:1-1", 400}} {
		if code, env := th.UserDo(t, http.MethodPatch, path(c.id), c.user, ""); code != c.code {
			t.Errorf("user %d reads %s: %d %+v, want %d", c.user, c.id, code, env, c.code)
		}
	}
	code, env = th.UserDo(t, http.MethodPost, "/api/v1/notifications/read-all", 7, `{"upTo":"`+ids[2]+`"}`)
	var all inbox.ReadAllResult
	testhub.Remarshal(t, env.Result, &all)
	if code != 200 || all.Marked != 2 || all.ReadAt == "" {
		t.Fatalf("read-all upTo: %d %+v, want 2 marked", code, env)
	}
	list := th.InboxOf(t, 7)
	if list[0].NotificationID != ids[3] || list[0].ReadAt != nil || list[1].ReadAt == nil || *list[3].ReadAt != first.ReadAt {
		t.Fatalf("inbox after read-all upTo: %+v", list)
	}
	code, env = th.UserDo(t, http.MethodPost, "/api/v1/notifications/read-all", 7, "")
	testhub.Remarshal(t, env.Result, &all)
	if code != 200 || all.Marked != 1 || th.UnreadOf(t, 7) != 0 {
		t.Fatalf("read-all: %d %+v", code, env)
	}
	for _, body := range []string{`{"upTo":"x"}`, `{"upTo":5}`, `[`} {
		if code, env := th.UserDo(t, http.MethodPost, "/api/v1/notifications/read-all", 7, body); code != 400 || env.Code != "COMMON400" {
			t.Errorf("read-all %s: %d %+v", body, code, env)
		}
	}
}

func TestInbox_ListPagesNewestFirst(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, fmt.Sprintf("%d:%s", 75+i%2, th.Notify(t, int64(75+i%2), "comment.created", 9).StreamID))
	}
	tok := th.Token(t, 9)
	code, env := th.Get(t, "/api/v1/notifications?limit=2", tok)
	var p inbox.InboxPage
	testhub.Remarshal(t, env.Result, &p)
	if code != 200 || len(p.Notifications) != 2 || !p.HasMore || p.Notifications[0].NotificationID != ids[4] || *p.NextBefore != ids[3] {
		t.Fatalf("first page %d %+v", code, env)
	}
	_, env = th.Get(t, "/api/v1/notifications?limit=2&before="+*p.NextBefore, tok)
	testhub.Remarshal(t, env.Result, &p)
	if len(p.Notifications) != 2 || p.Notifications[0].NotificationID != ids[2] {
		t.Fatalf("second page %+v", p)
	}
	_, env = th.Get(t, "/api/v1/notifications?limit=2&before="+ids[1], tok)
	testhub.Remarshal(t, env.Result, &p)
	if len(p.Notifications) != 1 || p.HasMore || p.NextBefore != nil || p.Notifications[0].NotificationID != ids[0] {
		t.Fatalf("last page %+v", p)
	}
	_, env = th.Get(t, "/api/v1/notifications?limit=20", th.Token(t, 10))
	if !strings.Contains(fmt.Sprint(env.Result), "notifications:[]") {
		t.Fatalf("empty inbox %+v", env.Result)
	}
	// limit is clamped to 100, and a page of 100 with more behind says so.
	for range 105 {
		th.Notify(t, 79, "comment.created", 10)
	}
	_, env = th.Get(t, "/api/v1/notifications?limit=100000", th.Token(t, 10))
	testhub.Remarshal(t, env.Result, &p)
	if len(p.Notifications) != 100 || !p.HasMore || p.NextBefore == nil {
		t.Fatalf("limit clamped to 100: %d items, hasMore %v", len(p.Notifications), p.HasMore)
	}
	_, env = th.Get(t, "/api/v1/notifications?limit=100&before="+*p.NextBefore, th.Token(t, 10))
	testhub.Remarshal(t, env.Result, &p)
	if len(p.Notifications) != 5 || p.HasMore || p.NextBefore != nil {
		t.Fatalf("the last page: %d items, hasMore %v", len(p.Notifications), p.HasMore)
	}
	for _, q := range []string{"limit=0", "limit=-1", "limit=x", "before=abc", "before=1"} {
		if code, env := th.Get(t, "/api/v1/notifications?"+q, tok); code != 400 || env.Code != "COMMON400" {
			t.Errorf("%s: %d %s", q, code, env.Code)
		}
	}
}

// Publishes and reads racing for one user: the count always equals the
// unread entries, also once the inbox is trimmed to INBOX_MAX_ENTRIES.
func TestInbox_ConcurrentPublishesAndReadsKeepTheCountTrue(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { c.Inbox.MaxEntries = 300 })
	const n = 2000
	u := racer{th: th, user: map[string]string{"Authorization": "Bearer " + th.Token(t, 11), "Content-Type": "application/json"}}
	errs, reads, readAlls := u.race(n)
	if len(errs) > 0 {
		t.Fatalf("%d requests failed, the first: %v", len(errs), errs[0])
	}
	if reads < n/10 || readAlls != n/50 {
		t.Fatalf("%d reads and %d read-alls took: the race proved little", reads, readAlls)
	}
	list := th.InboxOf(t, 11)
	unread := 0
	for _, e := range list {
		if e.ReadAt == nil {
			unread++
		}
	}
	if len(list) > 300 {
		t.Fatalf("inbox holds %d entries, INBOX_MAX_ENTRIES is 300", len(list))
	}
	if got := th.UnreadOf(t, 11); got != int64(unread) {
		t.Fatalf("unread count %d, but %d of %d entries are unread", got, unread, len(list))
	}
}

// racer sends user 11's and the backend's requests from goroutines other
// than the test's.
type racer struct {
	th   *testhub.Hub
	user map[string]string // user 11's headers
}

// race sends n requests from 16 goroutines: every other one a publish to
// user 11, one in 50 a read-all, the rest a read of a listed entry. It
// returns what failed, how many reads took and how many read-alls answered.
func (r racer) race(n int) (errs []error, reads, readAlls int) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	work := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				var err error
				took := false
				switch {
				case i%2 == 0:
					err = r.publish(i)
				case i%50 == 1:
					err = r.readAll()
				default:
					took, err = r.read(i)
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				if took {
					reads++
				}
				if i%50 == 1 && err == nil {
					readAlls++
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	return errs, reads, readAlls
}

// publish publishes event i to user 11 in one of three rooms.
func (r racer) publish(i int) error {
	body := fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{"k":1},"recipientIds":[11]}`, 80+i%3)
	code, env, err := r.th.TryDo(http.MethodPost, "/api/v1/notifications/publish",
		map[string]string{"X-Internal-Key": r.th.Cfg.InternalAPIKey, "Content-Type": "application/json"}, body)
	if err == nil && code != 200 {
		err = fmt.Errorf("publish: %d %s", code, env.Code)
	}
	return err
}

// read marks one listed entry read: 200, or 404 when trimming took it
// meanwhile (INBOX_MAX_ENTRIES). It reports whether the read took.
func (r racer) read(i int) (bool, error) {
	code, env, err := r.th.TryDo(http.MethodGet, "/api/v1/notifications?limit=100", r.user, "")
	if err != nil || code != 200 {
		return false, fmt.Errorf("list: %d %v", code, err)
	}
	var p inbox.InboxPage
	if b, _ := json.Marshal(env.Result); json.Unmarshal(b, &p) != nil || len(p.Notifications) == 0 {
		return false, nil
	}
	id := p.Notifications[i%len(p.Notifications)].NotificationID
	code, _, err = r.th.TryDo(http.MethodPatch, "/api/v1/notifications/"+id+"/read", r.user, "")
	switch {
	case err != nil:
		return false, err
	case code == 404:
		return false, nil
	case code != 200:
		return false, fmt.Errorf("read %s: %d", id, code)
	}
	return true, nil
}

// readAll marks all of user 11's inbox read.
func (r racer) readAll() error {
	code, env, err := r.th.TryDo(http.MethodPost, "/api/v1/notifications/read-all", r.user, "")
	if err == nil && code != 200 {
		err = fmt.Errorf("read-all: %d %s", code, env.Code)
	}
	return err
}

func TestInbox_RetentionDropsOldEntries(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), func(c *testhub.Configs) { c.Inbox.MaxEntries = 3 })
	for i := 0; i < 5; i++ {
		th.Notify(t, 77, "comment.created", 12)
	}
	if l, n := th.InboxOf(t, 12), th.UnreadOf(t, 12); len(l) != 3 || n != 3 {
		t.Fatalf("after 5 into an inbox of 3: %d entries, unread %d", len(l), n)
	}
	// Age: move every entry 31 days back, as if time had passed.
	testhub.AgeInbox(t, testredis.Client(t, rs.Addr()), 12, 31*24*time.Hour)
	if l, n := th.InboxOf(t, 12), th.UnreadOf(t, 12); len(l) != 0 || n != 0 {
		t.Fatalf("after 31 days: %d entries, unread %d", len(l), n)
	}
}

// A publish to 10,000 recipients goes to Redis as bounded pipelines, each
// under its own time limit: through a link that takes 4 s to carry the
// whole fan-out, it still answers 200 with every inbox written (one
// pipeline of it all met the 3 s limit and answered 503).
func TestInbox_BigFanOutGoesInBoundedPipelines(t *testing.T) {
	rs := testredis.Start(t)
	proxy := testhub.StartFreezeProxy(t, rs.Addr())
	proxy.UpRate.Store(1 << 20)
	th := testhub.Start(t, proxy.Addr(), nil)
	recipients := make([]string, inbox.MaxRecipients)
	for i := range recipients {
		recipients[i] = strconv.Itoa(20000 + i)
	}
	code, env := th.PublishRaw(t, `{"roomId":77,"eventType":"comment.created","data":{"text":"all hands"},"recipientIds":[`+strings.Join(recipients, ",")+`]}`)
	if code != 200 {
		t.Fatalf("a publish to %d recipients over a slow link: %d %+v", len(recipients), code, env)
	}
	for _, u := range []int64{20000, 25000, 29999} {
		if n := th.UnreadOf(t, u); n != 1 {
			t.Fatalf("recipient %d has %d unread when the publish answered, want 1", u, n)
		}
	}
}

// dyingUser is the Redis user a "dying" hub connects as (refuseInboxes).
const dyingUser = "dying"

// dyingURL is the Redis URL of a hub that connects to addrs as dyingUser
// ("redis+cluster://" for a cluster's, else one address).
func dyingURL(cluster bool, addrs ...string) string {
	if cluster {
		return "redis+cluster://" + dyingUser + ":pw@" + strings.Join(addrs, ",")
	}
	return "redis://" + dyingUser + ":pw@" + addrs[0]
}

// refuseInboxes, while on, has each Redis of nodes refuse dyingUser any key
// that starts with "inbox:" (its ACL allows every other key, command and
// channel): a hub connected as dyingUser publishes to a room, keeps the
// outbox note, then fails its first inbox write, as a hub that dies between
// the two would. Off, dyingUser may touch every key. Its connections keep
// working across the change: Redis checks the ACL at each command.
func refuseInboxes(t testing.TB, on bool, nodes ...rueidis.Client) {
	t.Helper()
	keys := []string{"~*"}
	if on {
		keys = []string{"~[^i]*", "~i[^n]*", "~in[^b]*", "~inb[^o]*", "~inbo[^x]*", "~inbox[^:]*"}
	}
	for _, n := range nodes {
		args := append([]string{"ACL", "SETUSER", dyingUser, "on", ">pw", "+@all", "&*", "resetkeys"}, keys...)
		if err := testredis.Do(t, n, args...).Error(); err != nil {
			t.Fatalf("ACL SETUSER: %v", err)
		}
	}
}
