package delivery_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/hub/delivery"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// The user's only stream is on the other instance: a push that waits for
// them to be offline is skipped; once the stream closes it goes out.
func TestDelivery_OnlyIfOfflineSeesStreamsOnEveryInstance(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	g := testhub.StartGateway(t, nil)
	rules := testhub.DeliveryConfig(g, `{"comment.created":{"push":{"onlyIfOffline":true}}}`)
	cfg := func(c *testhub.Configs) {
		rules(c)
		c.PresenceUserTTL = 3 * time.Second // the registry read every second
	}
	a := testhub.Start(t, rs.Addr(), cfg)
	b := testhub.Start(t, rs.Addr(), cfg)
	s := b.SettledUserStream(t, 1)

	nid := a.NotifyWith(t, 7, "", 1, 2)
	r := a.WaitDelivery(t, nid, 1, "push", "skipped")
	if testhub.Str(r.Reason) != "online" {
		t.Fatalf("user 1 has a stream open on the other instance: %+v", r)
	}
	a.WaitDelivery(t, nid, 2, "push", "sent")
	if c := g.Next(t, testhub.Wait); c.Body.UserID != 2 {
		t.Fatalf("the gateway reached user %d", c.Body.UserID)
	}

	s.Close()
	testhub.Eventually(t, 5*time.Second, "the stream leaves user:online", func() bool {
		n, err := testredis.Do(t, a.Redis, "ZCARD", hub.UserOnlineKey(1)).AsInt64()
		return err == nil && n == 0
	})
	nid = a.NotifyWith(t, 7, "", 1)
	a.WaitDelivery(t, nid, 1, "push", "sent")

	// A stream left behind by a killed instance does not count once that
	// instance's lease has ended, and the claim forgets it. Either instance's
	// worker may claim the delivery, with its own reading of the registry:
	// both must have read it.
	testredis.Do(t, a.Redis, "ZADD", hub.PresenceInstancesKey, strconv.FormatInt(time.Now().UnixMilli()-1000, 10), "killed")
	testredis.Do(t, a.Redis, "ZADD", hub.UserOnlineKey(1), "+inf", "killed.c1")
	testhub.Eventually(t, 10*time.Second, "the killed instance known to both instances", func() bool {
		return strings.Contains(a.Hub.DeadInstances(), "killed") && strings.Contains(b.Hub.DeadInstances(), "killed")
	})
	nid = a.NotifyWith(t, 7, "", 1)
	a.WaitDelivery(t, nid, 1, "push", "sent")
	if n, _ := testredis.Do(t, a.Redis, "ZCARD", hub.UserOnlineKey(1)).AsInt64(); n != 0 {
		t.Fatalf("user:online keeps %d streams of a dead instance", n)
	}
}

// A seen on another instance's tab just before the email is due cancels it.
func TestDelivery_UnlessSeenCanceledByASeenElsewhere(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	rs := testredis.Start(t)
	g := testhub.StartGateway(t, nil)
	// Due in 5 s: the seen lands first however slow the machine.
	cfg := testhub.DeliveryConfig(g, `{"comment.created":{"email":{"afterSecs":5,"unless":"seen"}}}`)
	a := testhub.Start(t, rs.Addr(), cfg)
	b := testhub.Start(t, rs.Addr(), cfg)
	nid := a.NotifyWith(t, 7, "", 1, 2)
	if r := a.DeliveriesOf(t, nid)["1/email"]; r.State != "scheduled" || r.DueAt == nil {
		t.Fatalf("before it is due: %+v", r)
	}
	b.Act(t, 1, nid, "seen", "")
	r := a.WaitDelivery(t, nid, 1, "email", "canceled")
	if testhub.Str(r.Reason) != "seen" {
		t.Fatalf("canceled for %q, want seen", testhub.Str(r.Reason))
	}
	a.WaitDelivery(t, nid, 2, "email", "sent")
	if c := g.Next(t, testhub.Wait); c.Body.UserID != 2 {
		t.Fatalf("the gateway reached user %d", c.Body.UserID)
	}
	g.Quiet(t, 500*time.Millisecond)
}

func TestDelivery_PreferencesAreKeptAndHonoured(t *testing.T) {
	rs := testredis.Start(t)
	g := testhub.StartGateway(t, nil)
	th := testhub.Start(t, rs.Addr(), testhub.DeliveryConfig(g, `{"comment.created":{"push":{},"email":{}},"like.toggled":{"push":{}}}`))
	s := th.SettingsOf(t, 1)
	if len(s.Channels) != 2 || !s.Channels["push"].Enabled || !s.Channels["email"].Enabled || s.QuietHours != nil {
		t.Fatalf("default settings: %+v", s)
	}
	put := func(body string) int {
		code, _ := th.UserDo(t, http.MethodPut, "/api/v1/notifications/settings", 1, body)
		return code
	}
	for _, bad := range []string{
		`{"mutedEventTypes":[],"channels":{"sms":{"enabled":true}}}`,
		`{"mutedEventTypes":[],"channels":{"push":{"mutedEventTypes":["nope"]}}}`,
		`{"mutedEventTypes":[],"quietHours":{"start":"22:00","end":"07:00","timeZone":"Mars/Olympus"}}`,
		`{"mutedEventTypes":[],"quietHours":{"start":"24:00","end":"07:00","timeZone":"Asia/Seoul"}}`,
		`{"mutedEventTypes":[],"quietHours":{"start":"07:00","end":"07:00","timeZone":"Asia/Seoul"}}`,
		`{"mutedEventTypes":[],"quietHours":"22-07"}`,
		`{"channels":{"push":{"enabled":false}}}`,
	} {
		if code := put(bad); code != 400 {
			t.Errorf("PUT %s: %d, want 400", bad, code)
		}
	}
	if s := th.SettingsOf(t, 1); !s.Channels["push"].Enabled {
		t.Fatalf("a refused PUT changed the settings: %+v", s)
	}
	if code := put(`{"mutedEventTypes":["like.toggled"],"channels":{"email":{"enabled":false},"push":{"mutedEventTypes":["comment.created"]}},` +
		`"quietHours":{"start":"22:00","end":"07:00","timeZone":"Asia/Seoul"}}`); code != 200 {
		t.Fatalf("PUT: %d", code)
	}
	if code := put(`{"mutedEventTypes":["like.toggled"]}`); code != 200 { // keeps channels and quiet hours
		t.Fatalf("PUT: %d", code)
	}
	s = th.SettingsOf(t, 1)
	if s.Channels["email"].Enabled || !s.Channels["push"].Enabled || fmt.Sprint(s.Channels["push"].MutedEventTypes) != "[comment.created]" ||
		s.QuietHours == nil || s.QuietHours.TimeZone != "Asia/Seoul" {
		t.Fatalf("settings after two PUTs: %+v", s)
	}

	nid := th.NotifyWith(t, 7, `"severity":"critical"`, 1) // critical: quiet hours do not hold it
	if r := th.WaitDelivery(t, nid, 1, "email", "canceled"); testhub.Str(r.Reason) != "disabled" {
		t.Fatalf("a disabled channel: %+v", r)
	}
	if r := th.WaitDelivery(t, nid, 1, "push", "canceled"); testhub.Str(r.Reason) != "muted" {
		t.Fatalf("a type muted on the channel: %+v", r)
	}
	// Muted in the inbox, not on push: the push goes out with the event's own fields.
	lt := th.NotifyExtra(t, 7, "like.toggled", `"severity":"critical"`, 1)
	lid := fmt.Sprintf("7:%s", lt.StreamID)
	th.WaitDelivery(t, lid, 1, "push", "sent")
	c := g.Next(t, testhub.Wait)
	if !strings.Contains(string(c.Body.Notifications[0]), `"eventType":"like.toggled"`) {
		t.Fatalf("the push of a type muted in-app carries %s", c.Body.Notifications[0])
	}
	if code := put(`{"mutedEventTypes":[],"quietHours":null}`); code != 200 || th.SettingsOf(t, 1).QuietHours != nil {
		t.Fatalf("quietHours null does not clear them")
	}
}

// Quiet hours that hold now defer a delivery to their end; critical ones go.
func TestDelivery_QuietHoursDeferToTheirEnd(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	rs := testredis.Start(t)
	g := testhub.StartGateway(t, nil)
	th := testhub.Start(t, rs.Addr(), testhub.DeliveryConfig(g, `{"comment.created":{"push":{}}}`))
	loc, _ := time.LoadLocation("America/New_York")
	now := time.Now().In(loc)
	start, end := now.Add(-time.Hour), now.Add(2*time.Hour)
	body := fmt.Sprintf(`{"mutedEventTypes":[],"quietHours":{"start":"%s","end":"%s","timeZone":"America/New_York"}}`,
		start.Format("15:04"), end.Format("15:04"))
	if code, env := th.UserDo(t, http.MethodPut, "/api/v1/notifications/settings", 1, body); code != 200 {
		t.Fatalf("PUT: %d %+v", code, env)
	}
	nid := th.NotifyWith(t, 7, "", 1)
	r := th.WaitDelivery(t, nid, 1, "push", "deferred")
	wantEnd := time.Date(end.Year(), end.Month(), end.Day(), end.Hour(), end.Minute(), 0, 0, loc)
	if testhub.Str(r.Reason) != "quiet_hours" || r.DueAt == nil {
		t.Fatalf("in quiet hours: %+v", r)
	}
	if due, _ := time.Parse(time.RFC3339, *r.DueAt); !due.Equal(wantEnd) {
		t.Fatalf("deferred to %s, want the quiet hours' end %s", *r.DueAt, wantEnd.UTC())
	}
	crit := th.NotifyWith(t, 7, `"severity":"critical"`, 1)
	th.WaitDelivery(t, crit, 1, "push", "sent")
	if c := g.Next(t, testhub.Wait); c.IdemKey != crit+"/1/push" {
		t.Fatalf("the gateway got %s, want the critical one", c.IdemKey)
	}
	g.Quiet(t, 300*time.Millisecond) // and nothing else
}

// 50 publishes at once for one user: the cap and the dedupe window hold
// exactly.
func TestDelivery_CapsAndDedupeHoldUnderConcurrency(t *testing.T) {
	rs := testredis.Start(t)
	capsAndDedupe(t, func(c *testhub.Configs) { c.RedisURL = "redis://" + rs.Addr() }, rs.Addr())
}

func capsAndDedupe(t *testing.T, redis func(*testhub.Configs), addr string) {
	g := testhub.StartGateway(t, nil)
	cfg := testhub.DeliveryConfig(g, `{"comment.created":{"push":{}},"like.toggled":{"email":{}}}`, redis, func(c *testhub.Configs) {
		c.Delivery.Caps = `{"push":{"perHour":10,"perDay":50}}`
	})
	a := testhub.Start(t, addr, cfg)
	b := testhub.Start(t, addr, cfg)
	var wg sync.WaitGroup
	ids := make(chan string, 100)
	errs := make(chan error, 100)
	for i := range 50 {
		wg.Add(2)
		th := []*testhub.Hub{a, b}[i%2]
		go func() {
			defer wg.Done()
			code, env, err := th.TryDo(http.MethodPost, "/api/v1/notifications/publish", map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey},
				`{"roomId":7,"eventType":"comment.created","data":{},"recipientIds":[1]}`)
			if err != nil || code != 200 {
				errs <- fmt.Errorf("publish: %d %v %+v", code, err, env)
				return
			}
			ids <- "7:" + env.Result.(map[string]any)["streamId"].(string) + "|push"
		}()
		go func() {
			defer wg.Done()
			code, env, err := th.TryDo(http.MethodPost, "/api/v1/notifications/publish", map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey},
				`{"roomId":8,"eventType":"like.toggled","data":{},"recipientIds":[1],"dedupeKey":"order-1"}`)
			if err != nil || code != 200 {
				errs <- fmt.Errorf("publish: %d %v %+v", code, err, env)
				return
			}
			ids <- "8:" + env.Result.(map[string]any)["streamId"].(string) + "|email"
		}()
	}
	wg.Wait()
	close(ids)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	tally := map[string]int{}
	for id := range ids {
		nid, ch, _ := strings.Cut(id, "|")
		var r string
		testhub.Eventually(t, 15*time.Second, "the delivery ends", func() bool {
			rec := a.DeliveriesOf(t, nid)["1/"+ch]
			r = rec.State + " " + testhub.Str(rec.Reason)
			return rec.State == "sent" || rec.State == "skipped"
		})
		tally[ch+" "+r]++
	}
	want := map[string]int{"push sent ": 10, "push skipped rate_limited": 40, "email sent ": 1, "email skipped deduplicated": 49}
	if fmt.Sprint(tally) != fmt.Sprint(want) {
		t.Fatalf("outcomes %v, want %v", tally, want)
	}
	if calls := g.Calls(); len(calls) != 11 {
		t.Fatalf("the gateway got %d hand-offs, want 11", len(calls))
	}
}

// Deliveries of one user and channel falling due within the digest window
// go out as one hand-off, under the first one's Idempotency-Key.
func TestDelivery_DigestHandsOffSeveralAsOne(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	rs := testredis.Start(t)
	g := testhub.StartGateway(t, nil)
	// A 5 s window: the three publishes fall in it however slow the machine.
	th := testhub.Start(t, rs.Addr(), testhub.DeliveryConfig(g, `{"comment.created":{"email":{"digestSecs":5}}}`))
	var ids []string
	for range 3 {
		ids = append(ids, th.NotifyWith(t, 7, "", 1))
	}
	c := g.Next(t, testhub.Wait)
	if c.IdemKey != ids[0]+"/1/email" || len(c.Body.Notifications) != 3 {
		t.Fatalf("the digest: key %s, %d items", c.IdemKey, len(c.Body.Notifications))
	}
	for i, raw := range c.Body.Notifications {
		var it struct{ NotificationID string }
		_ = json.Unmarshal(raw, &it)
		if it.NotificationID != ids[i] {
			t.Fatalf("the digest's item %d is %s, want %s", i, it.NotificationID, ids[i])
		}
		th.WaitDelivery(t, ids[i], 1, "email", "sent")
	}
	g.Quiet(t, 1500*time.Millisecond)
}

// Records are kept DELIVERY_RECORD_DAYS after they finished.
func TestDelivery_RecordsExpire(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	rs := testredis.Start(t)
	g := testhub.StartGateway(t, nil)
	th := testhub.Start(t, rs.Addr(), testhub.DeliveryConfig(g, `{"comment.created":{"push":{}}}`, func(c *testhub.Configs) {
		c.RecordTTL = time.Second
	}))
	nid := th.NotifyWith(t, 7, "", 1)
	th.WaitDelivery(t, nid, 1, "push", "sent")
	testhub.Eventually(t, 5*time.Second, "the record expires", func() bool { return len(th.DeliveriesOf(t, nid)) == 0 })
	// The next claim of the user drops the record from Redis too.
	other := th.NotifyWith(t, 7, "", 1)
	th.WaitDelivery(t, other, 1, "push", "sent")
	if got, err := testredis.Do(t, th.Redis, "HEXISTS", delivery.RecordsKey(1), nid+"|push").AsInt64(); err != nil || got != 0 {
		t.Fatalf("an expired record is still in Redis: %d %v", got, err)
	}
}

func TestDelivery_PublishFieldsAreChecked(t *testing.T) {
	rs := testredis.Start(t)
	g := testhub.StartGateway(t, nil)
	th := testhub.Start(t, rs.Addr(), testhub.DeliveryConfig(g, `{"comment.created":{"push":{}}}`))
	for _, extra := range []string{
		`"delivery":{"sms":{}}`,
		`"delivery":{"push":{"later":1}}`,
		`"delivery":{"push":{"afterSecs":604801}}`,
		`"delivery":{"push":{"digestSecs":-1}}`,
		`"delivery":{"push":{"unless":"clicked"}}`,
		`"delivery":[1]`,
		`"dedupeWindowSecs":60`,
		`"dedupeKey":"a b"`,
		`"dedupeKey":"k","dedupeWindowSecs":604801`,
	} {
		code, env := th.PublishRaw(t, `{"roomId":7,"eventType":"comment.created","data":{},"recipientIds":[1],`+extra+`}`)
		if code != 400 || env.Code != "COMMON400" {
			t.Errorf("publish with %s: %d %+v, want 400 COMMON400", extra, code, env)
		}
	}
	if code, _ := th.PublishRaw(t, `{"roomId":7,"eventType":"comment.created","data":{},"delivery":{"push":{}}}`); code != 400 {
		t.Errorf("delivery without recipientIds: %d, want 400", code)
	}
	// {} replaces the rules with none; a publish's own rule replaces them.
	none := th.NotifyWith(t, 7, `"delivery":{}`, 1)
	if recs := th.DeliveriesOf(t, none); len(recs) != 0 {
		t.Fatalf("delivery {} scheduled %+v", recs)
	}
	own := th.NotifyWith(t, 7, `"delivery":{"email":{"afterSecs":3600}}`, 1)
	recs := th.DeliveriesOf(t, own)
	if len(recs) != 1 || recs["1/email"].State != "scheduled" {
		t.Fatalf("a publish's own rules: %+v", recs)
	}
}

// A digest keeps the Idempotency-Key it was first handed off under: when
// its first item is read between a failed attempt and the retry, the retry
// carries the rest under the same key, so a gateway that honours the key
// does not send them twice.
func TestDelivery_DigestKeepsItsKeyWhenItsFirstItemIsCanceled(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	rs := testredis.Start(t)
	held := make(chan struct{})
	release := make(chan struct{})
	var calls atomic.Int32
	g := testhub.StartGateway(t, func(testhub.GatewayCall) testhub.GatewayAnswer {
		if calls.Add(1) == 1 { // the first attempt waits for the read, then fails
			close(held)
			return testhub.GatewayAnswer{Status: 503, Wait: func() { <-release }}
		}
		return testhub.GatewayAnswer{Status: 200}
	})
	th := testhub.Start(t, rs.Addr(), testhub.DeliveryConfig(g, `{"comment.created":{"email":{"digestSecs":5,"unless":"read"}}}`))
	var ids []string
	for range 3 {
		ids = append(ids, th.NotifyWith(t, 7, "", 1))
	}
	first := g.Next(t, testhub.Wait)
	<-held
	if len(first.Body.Notifications) != 3 || first.IdemKey != ids[0]+"/1/email" {
		t.Fatalf("the first attempt: key %s, %d items", first.IdemKey, len(first.Body.Notifications))
	}
	th.MarkRead(t, 1, ids[0])
	close(release)
	retry := g.Next(t, testhub.Wait)
	if retry.IdemKey != first.IdemKey || len(retry.Body.Notifications) != 2 || retry.Body.Attempt != 2 {
		t.Fatalf("the retry: key %s (first %s), %d items, attempt %d; want the first key, 2 items, attempt 2",
			retry.IdemKey, first.IdemKey, len(retry.Body.Notifications), retry.Body.Attempt)
	}
	th.WaitDelivery(t, ids[1], 1, "email", "sent")
	if r := th.DeliveriesOf(t, ids[0])["1/email"]; r.State != "canceled" || testhub.Str(r.Reason) != "read" {
		t.Fatalf("the read item's delivery: %+v", r)
	}
}

// A plain publish (the fan-out's own script, inbox_add_plain.lua)
// schedules deliveries as the general one does: for a recipient who muted
// the type in the app too (the push carries the event's own fields), and
// once for one it leaves to the general script (a new inbox with an older
// hub's seq to go on from).
func TestDelivery_APlainPublishSchedulesAsTheGeneralOne(t *testing.T) {
	rs := testredis.Start(t)
	g := testhub.StartGateway(t, nil)
	th := testhub.Start(t, rs.Addr(), testhub.DeliveryConfig(g, `{"like.toggled":{"push":{}}}`))
	if code, _ := th.UserDo(t, http.MethodPut, "/api/v1/notifications/settings", 1, `{"mutedEventTypes":["like.toggled"]}`); code != 200 {
		t.Fatalf("PUT settings: %d", code)
	}
	testredis.Do(t, th.Redis, "SET", "user:seq:{3}", "0")
	nid := fmt.Sprintf("7:%s", th.Notify(t, 7, "like.toggled", 1, 2, 3).StreamID)
	reached := map[int64]bool{}
	for range 3 {
		c := g.Next(t, testhub.Wait)
		if reached[c.Body.UserID] || !strings.Contains(string(c.Body.Notifications[0]), `"eventType":"like.toggled"`) {
			t.Fatalf("the gateway got %+v (reached before: %v)", c.Body, reached)
		}
		reached[c.Body.UserID] = true
	}
	for u := range int64(3) {
		th.WaitDelivery(t, nid, u+1, "push", "sent")
	}
	// The item a record follows: none for the muted one, else the item.
	for u, tg := range map[int64]string{1: `"tg":""`, 2: `"tg":"` + nid + `"`, 3: `"tg":"` + nid + `"`} {
		if rec, _ := testredis.Do(t, th.Redis, "HGET", delivery.ScheduleKeys(u)[0], nid+"|push").ToString(); !strings.Contains(rec, tg) {
			t.Errorf("user %d's record %s, want %s", u, rec, tg)
		}
	}
	if len(th.InboxOf(t, 1)) != 0 || len(th.InboxOf(t, 2)) != 1 || len(th.InboxOf(t, 3)) != 1 {
		t.Fatal("the inboxes: want the muted one empty, the others with the item")
	}
	g.Quiet(t, 500*time.Millisecond)
}
