package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"roomhub/lua"
)

var (
	inboxAddScript  = newScript(lua.InboxAdd)
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

// Settings are a user's notification settings.
type Settings struct {
	MutedEventTypes []string `json:"mutedEventTypes"`
}

// MaxMutedTypes bounds a user's muted event types.
const MaxMutedTypes = 64

// MaxInboxPage is the largest page GET /notifications returns.
const MaxInboxPage = 100

// NotificationID names a notification: "<roomId>:<stream id>".
func NotificationID(room int64, id StreamID) string { return itoa(room) + ":" + id.String() }

// ParseNotificationID reads "<roomId>:<stream id>" and returns its canonical form.
func ParseNotificationID(s string) (room int64, id StreamID, canonical string, err error) {
	r, sid, ok := strings.Cut(s, ":")
	if !ok {
		return 0, StreamID{}, "", fmt.Errorf("%w: a notificationId is <roomId>:<stream id>", ErrInvalid)
	}
	room, rok := parseRoomID(r)
	id, err = ParseStreamID(sid)
	if !rok || err != nil || id.IsZero() {
		return 0, StreamID{}, "", fmt.Errorf("%w: a notificationId is <roomId>:<stream id>", ErrInvalid)
	}
	return room, id, NotificationID(room, id), nil
}

// notice is one published event on its way into recipients' inboxes.
type notice struct {
	room      int64
	id        StreamID
	typ       string
	data      []byte
	publisher string // "" when none
	ts        string
}

// item is the notice as the inbox lists it, without readAt.
func (n notice) item() string {
	pub := "null"
	if n.publisher != "" {
		pub = strconv.Quote(n.publisher)
	}
	return `{"notificationId":"` + NotificationID(n.room, n.id) + `","roomId":` + itoa(n.room) +
		`,"eventType":"` + n.typ + `","data":` + string(n.data) + `,"publisherId":` + pub +
		`,"timestamp":` + strconv.Quote(n.ts) + `}`
}

// inboxKeys are the keys every inbox script takes (see lua/inbox_lib.lua).
func inboxKeys(user int64) []string {
	return []string{InboxKey(user), InboxOrderKey(user), InboxReadKey(user), UnreadCountKey(user),
		historyKey(userTopic(user)), seqKey(userTopic(user)), ReadStatusKey(user), MutedKey(user)}
}

// inboxArgs are the arguments every inbox script takes first, then extra.
func (h *Hub) inboxArgs(user int64, extra ...string) []string {
	return append([]string{itoa(h.cfg.InboxRetention.Milliseconds()), itoa(int64(h.cfg.InboxMaxEntries)),
		itoa(int64(h.cfg.InboxMaxEntries)), UserChannel(user), boolArg(h.sharded)}, extra...)
}

// deliverNotice puts n into each recipient's inbox (one pipelined round trip;
// on a cluster each user's script goes to that user's master), then clears its
// outbox entry. Each inbox script is idempotent, so doing this twice is safe.
func (h *Hub) deliverNotice(ctx context.Context, n notice, recipients []int64) error {
	ctx, cancel := detach(ctx)
	defer cancel()
	item, ms := n.item(), strconv.FormatUint(n.id.Ms, 10)
	execs := make([]rueidis.LuaExec, len(recipients))
	for i, u := range recipients {
		execs[i] = rueidis.LuaExec{Keys: inboxKeys(u),
			Args: h.inboxArgs(u, NotificationID(n.room, n.id), n.typ, item, ms)}
	}
	results := runMany(h, ctx, inboxAddScript, execs)
	for _, r := range results {
		arr, err := r.ToArray()
		if err != nil {
			return redisErr(err)
		}
		if kind, _ := arr[0].ToString(); kind == "new" {
			h.metrics.InboxWrites.Inc()
		}
	}
	_, err := call(h, ctx, h.rdb.B().Hdel().Key(OutboxKey(n.room)).Field(n.id.String()).Build(), done)
	return err
}

// Unread returns the user's unread count.
func (h *Hub) Unread(ctx context.Context, user int64) (int64, error) {
	return run(h, ctx, inboxViewScript, inboxKeys(user), h.inboxArgs(user, "count", "", "0", "0"), rueidis.RedisResult.AsInt64)
}

// Inbox returns up to limit notifications older than before (a notificationId,
// or "" for the newest), newest first.
func (h *Hub) Inbox(ctx context.Context, user int64, limit int, before string) (InboxPage, error) {
	bound := "0"
	if before != "" {
		_, id, canonical, err := ParseNotificationID(before)
		if err != nil {
			return InboxPage{}, fmt.Errorf("%w: before must be a notificationId", ErrInvalid)
		}
		before, bound = canonical, strconv.FormatUint(id.Ms*1024, 10)
	}
	arr, err := run(h, ctx, inboxViewScript, inboxKeys(user),
		h.inboxArgs(user, "list", before, bound, strconv.Itoa(limit)), rueidis.RedisResult.ToArray)
	if err != nil {
		return InboxPage{}, err
	}
	page := InboxPage{Notifications: []Notification{}}
	if len(arr) == 0 || (len(arr)-1)%3 != 0 {
		return InboxPage{}, fmt.Errorf("%w: inbox list answered %d values", ErrRedisReply, len(arr))
	}
	more, _ := arr[0].AsInt64()
	for i := 1; i < len(arr); i += 3 {
		raw, _ := arr[i+1].ToString()
		var n Notification
		if err := json.Unmarshal([]byte(raw), &n); err != nil {
			h.log.Warn("skipping malformed inbox entry", "user", user, "err", err)
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
// the first readAt. ErrNotFound when it is not in the user's inbox.
func (h *Hub) MarkRead(ctx context.Context, user int64, notificationID string) (ReadResult, error) {
	_, _, id, err := ParseNotificationID(notificationID)
	if err != nil {
		return ReadResult{}, err
	}
	arr, err := h.runRead(ctx, user, "one", nowTimestamp(), id, "")
	if err != nil {
		return ReadResult{}, err
	}
	if kind, _ := arr[0].ToString(); kind != "ok" || len(arr) < 2 {
		return ReadResult{}, fmt.Errorf("%w: notification %s", ErrNotFound, id)
	}
	readAt, _ := arr[1].ToString()
	return ReadResult{NotificationID: id, ReadAt: readAt}, nil
}

// MarkAllRead marks every unread notification read, up to upTo (inclusive,
// a notificationId) when it is not "".
func (h *Hub) MarkAllRead(ctx context.Context, user int64, upTo string) (ReadAllResult, error) {
	bound := ""
	if upTo != "" {
		_, id, canonical, err := ParseNotificationID(upTo)
		if err != nil {
			return ReadAllResult{}, fmt.Errorf("%w: upTo must be a notificationId", ErrInvalid)
		}
		upTo, bound = canonical, strconv.FormatUint(id.Ms*1024+1023, 10)
	}
	readAt := nowTimestamp()
	arr, err := h.runRead(ctx, user, "all", readAt, upTo, bound)
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
func (h *Hub) runRead(ctx context.Context, user int64, mode, readAt, target, bound string) ([]rueidis.RedisMessage, error) {
	ctx, cancel := detach(ctx)
	defer cancel()
	if err := h.markPending(ctx, user); err != nil {
		return nil, err
	}
	arr, err := run(h, ctx, inboxReadScript, inboxKeys(user), h.inboxArgs(user, mode, readAt, target, bound), rueidis.RedisResult.ToArray)
	if err != nil {
		return nil, err
	}
	if err := h.markPending(ctx, user); err != nil {
		return nil, err
	}
	if len(arr) == 0 {
		return nil, fmt.Errorf("%w: empty answer from the read script", ErrRedisReply)
	}
	return arr, nil
}

// Settings returns the user's notification settings.
func (h *Hub) Settings(ctx context.Context, user int64) (Settings, error) {
	types, err := h.mutedTypes(ctx, user)
	if err != nil {
		return Settings{}, err
	}
	sort.Strings(types)
	return Settings{MutedEventTypes: types}, nil
}

// SetSettings replaces the user's muted types. Each must be publishable. Every
// instance hears of the change at once (the control channel) and applies it
// to the user's open streams.
func (h *Hub) SetSettings(ctx context.Context, user int64, s Settings) (Settings, error) {
	set := map[string]bool{}
	for _, t := range s.MutedEventTypes {
		if !h.eventTypeAllowed(t) {
			return Settings{}, fmt.Errorf("%w: %q is not a publishable event type", ErrBadEventType, t)
		}
		set[t] = true
	}
	if len(set) > MaxMutedTypes {
		return Settings{}, fmt.Errorf("%w: at most %d muted event types", ErrInvalid, MaxMutedTypes)
	}
	types := make([]string, 0, len(set))
	for t := range set {
		types = append(types, t)
	}
	sort.Strings(types)
	ctx, cancel := detach(ctx)
	defer cancel()
	cmds := rueidis.Commands{h.rdb.B().Del().Key(MutedKey(user)).Build()}
	if len(types) > 0 {
		cmds = append(cmds, h.rdb.B().Sadd().Key(MutedKey(user)).Member(types...).Build())
	}
	if err := callMany(h, ctx, cmds); err != nil {
		return Settings{}, err
	}
	h.announceMutes(ctx, user, types)
	return Settings{MutedEventTypes: types}, nil
}
