package inbox

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// Actions on items. Each one also marks the item seen, except unarchive,
// unsnooze and delete; repeating one changes nothing.
const (
	ActionRead      = "read"
	ActionSeen      = "seen"
	ActionArchive   = "archive"
	ActionUnarchive = "unarchive"
	ActionSnooze    = "snooze"
	ActionUnsnooze  = "unsnooze"
	ActionDelete    = "delete"
)

// BulkActions are the actions POST /notifications/bulk takes.
var BulkActions = []string{ActionSeen, ActionRead, ActionArchive, ActionUnarchive, ActionDelete}

// Snooze bounds, by the hub's clock.
const (
	MinSnooze = time.Minute
	MaxSnooze = 90 * 24 * time.Hour
)

// MaxBulkIDs bounds the ids of one bulk action.
const MaxBulkIDs = 100

// ErrDeleted marks an action on an item the user deleted (or that expired).
var ErrDeleted = fmt.Errorf("%w: the notification was deleted", hub.ErrNotFound)

// BulkRequest is one action over listed ids or over every item that passes
// a filter, up to an item.
type BulkRequest struct {
	Action string
	IDs    []string // at most MaxBulkIDs; or
	Filter *Filter  // with UpTo (inclusive, a notificationId) or ""
	UpTo   string
}

// BulkResult answers a bulk action.
type BulkResult struct {
	Changed int64           `json:"changed"`
	More    bool            `json:"more"` // items are left: the caller repeats the call
	At      string          `json:"at"`
	Counts  json.RawMessage `json:"counts"`
	Looked  int             `json:"-"` // items looked at (what the call cost)
}

// A bulk action over a filter does bounded work: each script looks at most
// at bulkLook items (a few ms of Redis), one call runs at most bulkScripts
// of them, other clients served in between; more says the caller repeats.
const (
	bulkLook    = 250
	bulkScripts = 4
	// MaxBulkLook is the most items one bulk call looks at (and changes).
	MaxBulkLook = bulkLook * bulkScripts
	// bulkKeep is how long a call's place is kept for its repeat.
	bulkKeep = time.Minute
)

// MarkRead marks one notification of the user read (and seen); reading it
// again keeps the first readAt. hub.ErrNotFound when it is not in the
// user's inbox.
func (ib *Inbox) MarkRead(ctx context.Context, user int64, notificationID string) (ReadResult, error) {
	n, err := ib.Act(ctx, user, ActionRead, notificationID, time.Time{})
	if err != nil {
		return ReadResult{}, err
	}
	return ReadResult{NotificationID: n.NotificationID, ReadAt: *n.ReadAt}, nil
}

// MarkAllRead marks every visible unread notification read, up to upTo
// (inclusive, a notificationId) when it is not "".
func (ib *Inbox) MarkAllRead(ctx context.Context, user int64, upTo string) (ReadAllResult, error) {
	res, err := ib.Bulk(ctx, user, BulkRequest{Action: ActionRead, Filter: &Filter{State: StateUnread}, UpTo: upTo})
	if err != nil {
		return ReadAllResult{}, err
	}
	return ReadAllResult{Marked: res.Changed, More: res.More, ReadAt: res.At, Looked: res.Looked}, nil
}

// Act does action (read, seen, archive, unarchive, snooze until, unsnooze)
// to one item and returns it as it is then. hub.ErrNotFound when it is not
// in the user's inbox (ErrDeleted when it was deleted or expired).
func (ib *Inbox) Act(ctx context.Context, user int64, action, notificationID string, until time.Time) (Notification, error) {
	_, _, id, err := ParseNotificationID(notificationID)
	if err != nil {
		return Notification{}, err
	}
	var untilMs string
	if action == ActionSnooze {
		if untilMs, err = snoozeUntil(until); err != nil {
			return Notification{}, err
		}
	}
	arr, err := ib.runAct(ctx, user, hub.NowTimestamp(), act{action: action, target: "one", ids: id, untilMs: untilMs})
	if err != nil {
		return Notification{}, err
	}
	switch kind, _ := arr[0].ToString(); {
	case kind == "deleted":
		return Notification{}, fmt.Errorf("%w: %s", ErrDeleted, id)
	case kind != "ok" || len(arr) < 2:
		return Notification{}, fmt.Errorf("%w: notification %s", hub.ErrNotFound, id)
	}
	raw, _ := arr[1].ToString()
	var n Notification
	if err := json.Unmarshal([]byte(raw), &n); err != nil {
		return Notification{}, fmt.Errorf("%w: item %s: %w", hub.ErrRedisReply, id, err)
	}
	return n, nil
}

// Delete deletes one item for good: it leaves lists and counts (a read of
// it not yet flushed is still flushed). Deleting it again is no error;
// hub.ErrNotFound when it was never in the user's inbox.
func (ib *Inbox) Delete(ctx context.Context, user int64, notificationID string) (string, error) {
	_, _, id, err := ParseNotificationID(notificationID)
	if err != nil {
		return "", err
	}
	arr, err := ib.runAct(ctx, user, hub.NowTimestamp(), act{action: ActionDelete, target: "one", ids: id})
	if err != nil {
		return "", err
	}
	if kind, _ := arr[0].ToString(); kind == "missing" {
		return "", fmt.Errorf("%w: notification %s", hub.ErrNotFound, id)
	}
	return id, nil
}

// Bulk does one action over listed ids (those not in the inbox are passed
// over) or over every item that passes a filter, up to an item.
func (ib *Inbox) Bulk(ctx context.Context, user int64, req BulkRequest) (BulkResult, error) {
	if !slices.Contains(BulkActions, req.Action) {
		return BulkResult{}, fmt.Errorf("%w: action must be one of %s", hub.ErrInvalid, strings.Join(BulkActions, ", "))
	}
	var arr []rueidis.RedisMessage
	var err error
	at := hub.NowTimestamp()
	switch {
	case (req.Filter == nil) == (len(req.IDs) == 0):
		return BulkResult{}, fmt.Errorf("%w: a bulk action takes notificationIds or a filter", hub.ErrInvalid)
	case req.Filter == nil:
		if len(req.IDs) > MaxBulkIDs {
			return BulkResult{}, fmt.Errorf("%w: at most %d notificationIds", hub.ErrInvalid, MaxBulkIDs)
		}
		if req.UpTo != "" {
			return BulkResult{}, fmt.Errorf("%w: upTo goes with a filter", hub.ErrInvalid)
		}
		ids := make([]string, len(req.IDs))
		for i, raw := range req.IDs {
			if _, _, ids[i], err = ParseNotificationID(raw); err != nil {
				return BulkResult{}, err
			}
		}
		arr, err = ib.runAct(ctx, user, at, act{action: req.Action, target: "ids", ids: strings.Join(ids, ",")})
	default:
		f := *req.Filter
		if err := f.Check(); err != nil {
			return BulkResult{}, err
		}
		a := act{action: req.Action, target: "filter", filter: &f}
		if req.UpTo != "" {
			if a.upTo, a.upToScore, err = place(req.UpTo, true); err != nil {
				return BulkResult{}, fmt.Errorf("%w: upTo must be a notificationId", hub.ErrInvalid)
			}
		}
		a.sig = strings.Join(append(append([]string{a.action}, f.args()...), a.upTo), "|")
		return ib.bulkFilter(ctx, user, at, a)
	}
	if err != nil {
		return BulkResult{}, err
	}
	r, _, err := bulkReply(arr, 2, at)
	r.Looked = len(req.IDs)
	return r, err
}

// bulkReply reads a bulk script's answer (lua/inbox_act.lua): changed and
// the counts, then, from a filter's script (want 4), whether there is more
// and how many items it looked at.
func bulkReply(arr []rueidis.RedisMessage, want int, at string) (BulkResult, int, error) {
	if len(arr) < want {
		return BulkResult{}, 0, fmt.Errorf("%w: bulk answered %d values", hub.ErrRedisReply, len(arr))
	}
	changed, _ := arr[0].AsInt64()
	counts, _ := arr[1].ToString()
	r := BulkResult{Changed: changed, At: at, Counts: json.RawMessage(counts)}
	if want < 4 {
		return r, 0, nil
	}
	more, _ := arr[2].AsInt64()
	looked, _ := arr[3].AsInt64()
	r.More = more == 1
	return r, int(looked), nil
}

// bulkFilter runs a filter's bulk action as up to bulkScripts scripts of
// bulkLook items each, each going on where the last left off.
func (ib *Inbox) bulkFilter(ctx context.Context, user int64, at string, a act) (BulkResult, error) {
	var res BulkResult
	for range bulkScripts {
		arr, err := ib.runAct(ctx, user, at, a)
		if err != nil {
			return BulkResult{}, err
		}
		r, looked, err := bulkReply(arr, 4, at)
		if err != nil {
			return BulkResult{}, err
		}
		r.Changed, r.Looked = res.Changed+r.Changed, res.Looked+looked
		res = r
		if !res.More {
			break
		}
	}
	return res, nil
}

// snoozeUntil checks a snooze's end (1 minute to 90 days ahead, by the
// hub's clock) and returns it in ms.
func snoozeUntil(until time.Time) (string, error) {
	ahead := time.Until(until)
	if ahead < MinSnooze || ahead > MaxSnooze {
		return "", fmt.Errorf("%w: until must be 1 minute to 90 days ahead", hub.ErrInvalid)
	}
	return strconv.FormatInt(until.UnixMilli(), 10), nil
}

// act is one call of lua/inbox_act.lua.
type act struct {
	action, target  string
	ids             string  // one: the id; ids: comma list
	filter          *Filter // target filter
	upTo, upToScore string  // target filter: the last item, and its fallback place
	untilMs         string  // snooze
	sig             string  // target filter: the call's signature (see lua/inbox_act.lua)
}

// runAct runs the action script at time at. A read lists the user for the
// flusher before and after it (see markPending); a snooze lists the user
// for the timer worker before it (see markTimer).
func (ib *Inbox) runAct(ctx context.Context, user int64, at string, a act) ([]rueidis.RedisMessage, error) {
	ctx, cancel := hub.Detach(ctx)
	defer cancel()
	if c := ib.metrics.actions[a.action]; c != nil {
		c.Inc()
	}
	f, fjson := Filter{State: StateVisible}, "null"
	if a.filter != nil {
		f, fjson = *a.filter, a.filter.json()
	}
	switch a.action {
	case ActionRead:
		if err := ib.markPending(ctx, user); err != nil {
			return nil, err
		}
	case ActionSnooze:
		if err := ib.markTimer(ctx, user, a.untilMs); err != nil {
			return nil, err
		}
	}
	args := append(append([]string{a.action, a.target, a.ids}, f.args()...), a.upTo, a.upToScore, a.untilMs, fjson,
		a.sig, strconv.Itoa(bulkLook), strconv.FormatInt(bulkKeep.Milliseconds(), 10))
	arr, err := hub.Run(ib.rdb, ctx, inboxActScript, inboxKeys(user), ib.inboxArgs(user, at, args...), rueidis.RedisResult.ToArray)
	if err != nil {
		return nil, err
	}
	if a.action == ActionRead {
		// A flush that ran between the first listing and the write found
		// nothing and dropped the listing; listing again (a new score)
		// brings the read back.
		if err := ib.markPending(ctx, user); err != nil {
			return nil, err
		}
	}
	if len(arr) == 0 {
		return nil, fmt.Errorf("%w: empty answer from the action script", hub.ErrRedisReply)
	}
	return arr, nil
}
