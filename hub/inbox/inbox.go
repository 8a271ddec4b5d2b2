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
	"roomhub/lua"
)

// Inbox is every user's notifications: it puts published events into their
// recipients' inboxes, lists and reads them, keeps each user's muted types,
// and flushes reads to the backend. Create it with New before the core
// starts; its background work is the core's (Hub.Go) and stops with it.
type Inbox struct {
	core    *hub.Hub
	rdb     *hub.Redis
	cfg     hub.Config
	log     *slog.Logger
	metrics *counters
	sink    Sink // where flushed reads go
	mutes   mutes

	// AfterPublishHook, when set (tests only), runs between a publish and its
	// inbox writes; an error abandons the writes as a dying instance would.
	AfterPublishHook func() error
}

// New returns the inbox on core. It registers with core what it runs in the
// background (the write-behind flusher, the outbox sweep, the final flush at
// Close) and the user's muted types for core's streams; call it before
// core.Start.
func New(core *hub.Hub, log *slog.Logger) *Inbox {
	cfg := core.Config()
	ib := &Inbox{core: core, rdb: core.Redis(), cfg: cfg, log: log, metrics: newCounters(core.Metrics().Set)}
	ib.mutes.m = map[int64]*muteSet{}
	if cfg.ReadSinkURL != "" {
		ib.sink = NewHTTPSink(cfg.ReadSinkURL, cfg.InternalAPIKey)
	} else {
		ib.sink = &LogSink{Log: log}
		log.Warn("READ_SINK_URL is unset: reads are flushed to the log, not to a backend")
	}
	core.UseMutes(ib)
	core.OnControl(mutedControl, ib.onMutedControl)
	core.OnStart(ib.start)
	core.OnClose(ib.finalFlush)
	return ib
}

// start launches the background work.
func (ib *Inbox) start() {
	ib.core.Go(ib.runFlusher)
	ib.core.Go(ib.runOutboxSweeper)
}

var (
	inboxAddScript  = hub.NewScript(lua.InboxAdd)
	inboxReadScript = rueidis.NewLuaScript(lua.InboxRead)
	inboxViewScript = rueidis.NewLuaScript(lua.InboxView)
)

// Event types of the user stream. Both carry an id from the user's log.
const (
	NotificationCreatedType = "notification.created"
	NotificationReadType    = "notification.read"
	NotificationUnreadType  = "notification.unread" // the user stream's first event, without id
)

// Notification is one inbox entry as GET /notifications lists it.
type Notification struct {
	NotificationID string          `json:"notificationId"`
	RoomID         int64           `json:"roomId"`
	EventType      string          `json:"eventType"`
	Data           json.RawMessage `json:"data"`
	PublisherID    *string         `json:"publisherId"`
	Timestamp      string          `json:"timestamp"`
	ReadAt         *string         `json:"readAt"`
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
	ReadAt string `json:"readAt"`
}

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

// inboxKeys are the keys every inbox script takes (see lua/inbox_lib.lua).
func inboxKeys(user int64) []string {
	return []string{hub.InboxKey(user), hub.InboxOrderKey(user), hub.InboxReadKey(user), hub.UnreadCountKey(user),
		hub.TopicHistoryKey(hub.UserTopic(user)), hub.TopicSeqKey(hub.UserTopic(user)), hub.ReadStatusKey(user), hub.MutedKey(user)}
}

// inboxArgs are the arguments every inbox script takes first, then extra.
func (ib *Inbox) inboxArgs(user int64, extra ...string) []string {
	return append([]string{itoa(ib.cfg.InboxRetention.Milliseconds()), itoa(int64(ib.cfg.InboxMaxEntries)),
		itoa(int64(ib.cfg.InboxMaxEntries)), hub.UserChannel(user), boolArg(ib.rdb.Sharded())}, extra...)
}

// Unread returns the user's unread count.
func (ib *Inbox) Unread(ctx context.Context, user int64) (int64, error) {
	return hub.Run(ib.rdb, ctx, inboxViewScript, inboxKeys(user), ib.inboxArgs(user, "count", "", "0", "0"), rueidis.RedisResult.AsInt64)
}

// List returns up to limit notifications older than before (a notificationId,
// or "" for the newest), newest first.
func (ib *Inbox) List(ctx context.Context, user int64, limit int, before string) (InboxPage, error) {
	bound := "0"
	if before != "" {
		_, id, canonical, err := ParseNotificationID(before)
		if err != nil {
			return InboxPage{}, fmt.Errorf("%w: before must be a notificationId", hub.ErrInvalid)
		}
		before, bound = canonical, strconv.FormatUint(id.Ms*1024, 10)
	}
	arr, err := hub.Run(ib.rdb, ctx, inboxViewScript, inboxKeys(user),
		ib.inboxArgs(user, "list", before, bound, strconv.Itoa(limit)), rueidis.RedisResult.ToArray)
	if err != nil {
		return InboxPage{}, err
	}
	page := InboxPage{Notifications: []Notification{}}
	if len(arr) == 0 || (len(arr)-1)%3 != 0 {
		return InboxPage{}, fmt.Errorf("%w: inbox list answered %d values", hub.ErrRedisReply, len(arr))
	}
	more, _ := arr[0].AsInt64()
	for i := 1; i < len(arr); i += 3 {
		raw, _ := arr[i+1].ToString()
		var n Notification
		if err := json.Unmarshal([]byte(raw), &n); err != nil {
			ib.log.Warn("skipping malformed inbox entry", "user", user, "err", err)
			continue
		}
		if readAt, err := arr[i+2].ToString(); err == nil {
			n.ReadAt = &readAt
		}
		page.Notifications = append(page.Notifications, n)
	}
	page.HasMore = more == 1
	if k := len(page.Notifications); page.HasMore && k > 0 {
		next := page.Notifications[k-1].NotificationID
		page.NextBefore = &next
	}
	return page, nil
}

// MarkRead marks one notification of the user read; reading it again keeps
// the first readAt. hub.ErrNotFound when it is not in the user's inbox.
func (ib *Inbox) MarkRead(ctx context.Context, user int64, notificationID string) (ReadResult, error) {
	_, _, id, err := ParseNotificationID(notificationID)
	if err != nil {
		return ReadResult{}, err
	}
	arr, err := ib.runRead(ctx, user, "one", hub.NowTimestamp(), id, "")
	if err != nil {
		return ReadResult{}, err
	}
	if kind, _ := arr[0].ToString(); kind != "ok" || len(arr) < 2 {
		return ReadResult{}, fmt.Errorf("%w: notification %s", hub.ErrNotFound, id)
	}
	readAt, _ := arr[1].ToString()
	return ReadResult{NotificationID: id, ReadAt: readAt}, nil
}

// MarkAllRead marks every unread notification read, up to upTo (inclusive,
// a notificationId) when it is not "".
func (ib *Inbox) MarkAllRead(ctx context.Context, user int64, upTo string) (ReadAllResult, error) {
	bound := ""
	if upTo != "" {
		_, id, canonical, err := ParseNotificationID(upTo)
		if err != nil {
			return ReadAllResult{}, fmt.Errorf("%w: upTo must be a notificationId", hub.ErrInvalid)
		}
		upTo, bound = canonical, strconv.FormatUint(id.Ms*1024+1023, 10)
	}
	readAt := hub.NowTimestamp()
	arr, err := ib.runRead(ctx, user, "all", readAt, upTo, bound)
	if err != nil {
		return ReadAllResult{}, err
	}
	marked, _ := arr[0].AsInt64()
	return ReadAllResult{Marked: marked, ReadAt: readAt}, nil
}

// runRead runs the read script with the user listed for the flusher before
// and after it. Before: a crash after the write leaves the read listed. After:
// a flush that ran between listing and write found nothing, dropped the
// listing, and would strand the read; listing again (a new score) brings it
// back, and a flush already past its check sees the changed score and keeps it.
func (ib *Inbox) runRead(ctx context.Context, user int64, mode, readAt, target, bound string) ([]rueidis.RedisMessage, error) {
	ctx, cancel := hub.Detach(ctx)
	defer cancel()
	if err := ib.markPending(ctx, user); err != nil {
		return nil, err
	}
	arr, err := hub.Run(ib.rdb, ctx, inboxReadScript, inboxKeys(user), ib.inboxArgs(user, mode, readAt, target, bound), rueidis.RedisResult.ToArray)
	if err != nil {
		return nil, err
	}
	if err := ib.markPending(ctx, user); err != nil {
		return nil, err
	}
	if len(arr) == 0 {
		return nil, fmt.Errorf("%w: empty answer from the read script", hub.ErrRedisReply)
	}
	return arr, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
