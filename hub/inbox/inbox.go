package inbox

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/hub/delivery"
	"roomhub/lua"
)

// Inbox is every user's notifications: it puts published events into their
// recipients' inboxes, lists and reads them, keeps each user's muted types,
// and flushes reads to the backend. Create it with New before the core
// starts; its background work is the core's (Hub.Go) and stops with it.
type Inbox struct {
	core    *hub.Hub
	rdb     *hub.Redis
	cfg     Config
	coreCfg hub.Config
	log     *slog.Logger
	metrics *counters
	sink    Sink // where flushed reads go
	mutes   mutes
	// delivery schedules deliveries beyond the tab with the inbox writes;
	// nil schedules none.
	delivery *delivery.Delivery
	// fanouts runs topic publishes' fan-outs; nil refuses a topic.
	fanouts Fanouts
}

// New returns the inbox of cfg on core. It registers with core what it runs in the
// background (the write-behind flusher, the outbox sweep, the final flush at
// Close), the user's muted types and their logs for core's streams; call it
// before core.Start.
func New(core *hub.Hub, cfg Config, log *slog.Logger) *Inbox {
	ib := &Inbox{core: core, rdb: core.Redis(), cfg: cfg, coreCfg: core.Config(), log: log, metrics: newCounters(core.Metrics().Set)}
	ib.mutes.m = map[int64]*muteSet{}
	if cfg.ReadSinkURL != "" {
		ib.sink = NewHTTPSink(cfg.ReadSinkURL, ib.coreCfg.InternalAPIKey)
	} else {
		ib.sink = &LogSink{Log: log}
		log.Warn("READ_SINK_URL is unset: reads are flushed to the log, not to a backend")
	}
	core.UseMutes(ib)
	core.UseUserLogs(ib)
	core.OnControl(mutedControl, ib.onMutedControl)
	core.OnStart(ib.start)
	core.OnClose(ib.finalFlush)
	return ib
}

// UseDelivery makes publishes schedule their recipients' deliveries beyond
// the tab with d. Call it before the core starts.
func (ib *Inbox) UseDelivery(d *delivery.Delivery) { ib.delivery = d }

// Delivery returns what UseDelivery set, or nil.
func (ib *Inbox) Delivery() *delivery.Delivery { return ib.delivery }

// start launches the background work.
func (ib *Inbox) start() {
	ib.core.Go(ib.runFlusher)
	ib.core.Go(ib.runOutboxSweeper)
	ib.core.Go(ib.runTimers)
}

var (
	inboxAddScript      = hub.NewScript(lua.InboxAdd)
	inboxAddPlainScript = hub.NewScript(lua.InboxAddPlain)
	inboxActScript      = hub.NewScript(lua.InboxAct)
	inboxViewScript     = hub.NewScript(lua.InboxView)
)

// Event types of the user stream. All but the first two carry an id from
// the user's log, with the counts.
const (
	NotificationUnreadType  = "notification.unread" // the user stream's first event, without id
	NotificationCountsType  = "notification.counts" // its second, without id: the counts
	NotificationCreatedType = "notification.created"
	NotificationUpdatedType = "notification.updated"
	NotificationReadType    = "notification.read"
	NotificationDeletedType = "notification.deleted"
)

// Notification is one inbox item as GET /notifications lists it.
type Notification struct {
	NotificationID string          `json:"notificationId"`
	RoomID         int64           `json:"roomId"`
	EventType      string          `json:"eventType"`
	Data           json.RawMessage `json:"data"`
	PublisherID    *string         `json:"publisherId"`
	Timestamp      string          `json:"timestamp"`
	ReadAt         *string         `json:"readAt"`
	SeenAt         *string         `json:"seenAt"`
	ArchivedAt     *string         `json:"archivedAt"`
	SnoozedUntil   *string         `json:"snoozedUntil"`
	Severity       string          `json:"severity"`
	Tags           []string        `json:"tags"`
	ExpiresAt      *string         `json:"expiresAt"`
	Group          *Group          `json:"group"`
	ActivityAt     string          `json:"activityAt"`
}

// Group is what a grouped item says of its group.
type Group struct {
	Key    string   `json:"key"`
	Count  int      `json:"count"`
	Actors []string `json:"actors"`
	First  string   `json:"first"`
}

// InboxPage is one page of a user's inbox, newest first.
type InboxPage struct {
	Notifications []Notification `json:"notifications"`
	HasMore       bool           `json:"hasMore"`
	NextBefore    *string        `json:"nextBefore"`
}

// ReadResult answers marking one notification read.
type ReadResult struct {
	NotificationID string `json:"notificationId"`
	ReadAt         string `json:"readAt"`
}

// ReadAllResult answers read-all.
type ReadAllResult struct {
	Marked int64  `json:"marked"`
	More   bool   `json:"more"` // items are left: the caller repeats the call
	ReadAt string `json:"readAt"`
	Looked int    `json:"-"` // items looked at (what the call cost)
}

// ListLook bounds the items one page of GET /notifications looks at: with a
// filter few items pass, a page may hold fewer than its limit (even none)
// and still have more.
const ListLook = 1000

// MaxInboxPage is the largest page GET /notifications returns.
const MaxInboxPage = 100

// NotificationID names a notification: "<roomId>:<stream id>".
func NotificationID(room int64, id hub.StreamID) string { return itoa(room) + ":" + id.String() }

// ParseNotificationID reads "<roomId>:<stream id>" and returns its canonical form.
func ParseNotificationID(s string) (room int64, id hub.StreamID, canonical string, err error) {
	r, sid, ok := strings.Cut(s, ":")
	if !ok {
		return 0, hub.StreamID{}, "", fmt.Errorf("%w: a notificationId is <roomId>:<stream id>", hub.ErrInvalid)
	}
	room, rok := hub.ParseID(r)
	id, err = hub.ParseStreamID(sid)
	if !rok || err != nil || id.IsZero() {
		return 0, hub.StreamID{}, "", fmt.Errorf("%w: a notificationId is <roomId>:<stream id>", hub.ErrInvalid)
	}
	return room, id, NotificationID(room, id), nil
}

// place is where a notificationId stands when its item is no longer listed:
// its own time, as a score of inbox:order (see lua/inbox_lib.lua), and the
// id in canonical form. last: the highest score of that millisecond.
func place(notificationID string, last bool) (canonical, score string, err error) {
	_, id, canonical, err := ParseNotificationID(notificationID)
	if err != nil {
		return "", "", err
	}
	s := id.Ms * 1024
	if last {
		s += 1023
	}
	return canonical, strconv.FormatUint(s, 10), nil
}

// Unread returns the user's unread count: their visible unread items.
func (ib *Inbox) Unread(ctx context.Context, user int64) (int64, error) {
	return hub.Run(ib.rdb, ctx, inboxViewScript, inboxKeys(user), ib.inboxArgs(user, hub.NowTimestamp(), "count"), rueidis.RedisResult.AsInt64)
}

// Counts returns the user's counts as JSON: by state, tag and severity, with
// the version that rises with every change of their inbox.
func (ib *Inbox) Counts(ctx context.Context, user int64) (json.RawMessage, error) {
	s, err := hub.Run(ib.rdb, ctx, inboxViewScript, inboxKeys(user), ib.inboxArgs(user, hub.NowTimestamp(), "counts"), rueidis.RedisResult.ToString)
	return json.RawMessage(s), err
}

// List returns up to limit of the user's items that pass f, older than
// before (a notificationId, or "" for the newest), newest first.
func (ib *Inbox) List(ctx context.Context, user int64, f Filter, limit int, before string) (InboxPage, error) {
	bound := "0"
	if before != "" {
		var err error
		if before, bound, err = place(before, false); err != nil {
			return InboxPage{}, fmt.Errorf("%w: before must be a notificationId", hub.ErrInvalid)
		}
	}
	args := append(append([]string{"list"}, f.args()...), before, bound, strconv.Itoa(limit), strconv.Itoa(ListLook))
	arr, err := hub.Run(ib.rdb, ctx, inboxViewScript, inboxKeys(user), ib.inboxArgs(user, hub.NowTimestamp(), args...), rueidis.RedisResult.ToArray)
	if err != nil {
		return InboxPage{}, err
	}
	if len(arr) == 0 {
		return InboxPage{}, fmt.Errorf("%w: inbox list answered nothing", hub.ErrRedisReply)
	}
	if len(arr) < 2 {
		return InboxPage{}, fmt.Errorf("%w: inbox list answered %d values", hub.ErrRedisReply, len(arr))
	}
	page := InboxPage{Notifications: []Notification{}}
	more, _ := arr[0].AsInt64()
	resume, _ := arr[1].ToString()
	for _, m := range arr[2:] {
		raw, _ := m.ToString()
		var n Notification
		if err := json.Unmarshal([]byte(raw), &n); err != nil {
			ib.log.Warn("skipping malformed inbox item", "user", user, "err", err)
			continue
		}
		page.Notifications = append(page.Notifications, n)
	}
	// A page ends at its limit or at ListLook items looked at (a filter few
	// items pass): the next one starts below the last item looked at.
	page.HasMore = more == 1 && resume != ""
	if page.HasMore {
		page.NextBefore = &resume
	}
	return page, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
