package inbox_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"roomhub/hub/inbox"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// Expiry: an item leaves lists and counts at expiresAt (within 5 s), with
// notification.deleted reason expired; a snoozed item whose time came wakes,
// unseen, at the top, by the timer worker, with notification.updated.
func TestLifecycle_ExpiryAndWakeByTheTimerWorker(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	const u = 42
	s := th.SettledUserStream(t, u)
	keep := th.NotifyWith(t, 123, "", u)
	s.Next(t, testhub.Wait)
	// Far enough ahead that a slow publish is not refused as already past.
	exp := th.NotifyWith(t, 123, `"expiresAt":"`+time.Now().Add(5*time.Second).UTC().Format(time.RFC3339Nano)+`"`, u)
	if f := s.Next(t, testhub.Wait); f.Event != inbox.NotificationCreatedType || !strings.Contains(f.Data, `"expiresAt":"`) {
		t.Fatalf("created %+v", f)
	}
	f := s.NextMatching(t, 20*time.Second, func(f testhub.Frame) bool { return f.Event == inbox.NotificationDeletedType })
	if !strings.Contains(f.Data, exp) || !strings.Contains(f.Data, `"reason":"expired"`) {
		t.Fatalf("expiry: %s", f.Data)
	}
	if c := checkCountsMatchLists(t, th, u); c.Visible != 1 {
		t.Fatalf("after expiry %+v", c)
	}
	// Snooze keep, then let its time come (moved to now in Redis: the API's
	// shortest snooze is a minute).
	th.Act(t, u, keep, "snooze", `{"until":"`+time.Now().Add(2*time.Minute).UTC().Format(time.RFC3339)+`"}`)
	s.NextMatching(t, testhub.Wait, func(f testhub.Frame) bool { return f.Event == inbox.NotificationUpdatedType })
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	testredis.Do(t, th.Redis, "ZADD", inbox.DueKey(u), now, "s:"+keep)
	testredis.Do(t, th.Redis, "ZADD", inbox.TimersKey(u%inbox.TimerShards), now, strconv.Itoa(u))
	f = s.NextMatching(t, 10*time.Second, func(f testhub.Frame) bool { return f.Event == inbox.NotificationUpdatedType })
	var upd struct{ Notifications []inbox.Notification }
	if json.Unmarshal([]byte(f.Data), &upd) != nil || len(upd.Notifications) != 1 || upd.Notifications[0].NotificationID != keep ||
		upd.Notifications[0].SnoozedUntil != nil || upd.Notifications[0].SeenAt != nil {
		t.Fatalf("wake: %s", f.Data)
	}
	if c := checkCountsMatchLists(t, th, u); c.Visible != 1 || c.Snoozed != 0 || c.Unseen != 1 {
		t.Fatalf("after wake %+v", c)
	}
	testhub.Eventually(t, testhub.Wait, "the timer index emptied", func() bool {
		n, _ := testredis.Do(t, th.Redis, "ZCARD", inbox.TimersKey(u%inbox.TimerShards)).AsInt64()
		return n == 0
	})
}

// Timers live in Redis: an expiry scheduled through one instance fires
// through the other's timer worker when the first is gone.
func TestLifecycle_TimersSurviveAnInstance(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	rs := testredis.Start(t)
	a, b := testhub.Start(t, rs.Addr(), nil), testhub.Start(t, rs.Addr(), nil)
	const u = 62
	s := b.UserStream(t, u, "")
	s.Next(t, testhub.Wait)
	s.NextCounts(t)
	id := a.NotifyWith(t, 151, `"expiresAt":"`+time.Now().Add(5*time.Second).UTC().Format(time.RFC3339Nano)+`"`, u)
	s.Next(t, testhub.Wait) // created
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Hub.EndStreams(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Hub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f := s.NextMatching(t, 20*time.Second, func(f testhub.Frame) bool { return f.Event == inbox.NotificationDeletedType })
	if !strings.Contains(f.Data, id) || !strings.Contains(f.Data, `"reason":"expired"`) {
		t.Fatalf("expiry after instance A closed: %s", f.Data)
	}
}
