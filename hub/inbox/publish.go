package inbox

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// PublishRequest is an event for a room and, with RecipientIDs, a
// notification for each of those users.
type PublishRequest struct {
	hub.PublishRequest
	RecipientIDs []int64
}

// MaxRecipients bounds recipientIds: distinct users one publish notifies.
const MaxRecipients = 1000

// Publish publishes req's event to its room through the core, then puts it
// into each recipient's inbox. The publish script keeps the recipients in
// the room's outbox together with the event, so inbox writes that a dying
// instance left undone are finished by a retry (same idempotency key) or by
// the outbox sweep.
func (ib *Inbox) Publish(ctx context.Context, req PublishRequest) (hub.PublishResult, error) {
	recipients, err := distinctRecipients(req.RecipientIDs)
	if err != nil {
		return hub.PublishResult{}, err
	}
	p, err := ib.core.CheckPublish(req.PublishRequest)
	if err != nil {
		return hub.PublishResult{}, err
	}
	p.Body = fmt.Sprint(recipients) // "[1 2]", "[]": the form idempotency keys were first stored with
	p.Note = joinIDs(recipients)
	if p.Note != "" {
		// Before the event exists: an outbox entry is always findable.
		if err := ib.touchOutboxRoom(ctx, p.Room); err != nil {
			return hub.PublishResult{}, err
		}
	}
	res, err := ib.core.Publish(ctx, p)
	if err != nil || p.Note == "" || (res.Duplicate && !res.Pending) {
		return res, err
	}
	// A new event, or a retry of one whose inbox writes were left undone.
	id, err := hub.ParseStreamID(res.StreamID)
	if err != nil {
		return hub.PublishResult{}, fmt.Errorf("%w: publish id %q", hub.ErrRedisReply, res.StreamID)
	}
	ts := res.Timestamp
	if res.Duplicate {
		ev, err := ib.core.EventAt(ctx, p.Room, id)
		if err != nil {
			return hub.PublishResult{}, err
		}
		ts = ev.Timestamp
	}
	if ib.AfterPublishHook != nil {
		if err := ib.AfterPublishHook(); err != nil {
			return hub.PublishResult{}, err
		}
	}
	publisher := ""
	if p.PublisherID > 0 {
		publisher = strconv.FormatInt(p.PublisherID, 10)
	}
	n := notice{room: p.Room, id: id, typ: p.EventType, data: p.Data, publisher: publisher, ts: ts}
	if err := ib.deliverNotice(ctx, n, recipients); err != nil {
		return hub.PublishResult{}, err
	}
	return res, nil
}

// distinctRecipients checks recipient ids and drops repeats, keeping the order.
func distinctRecipients(ids []int64) ([]int64, error) {
	seen := make(map[int64]bool, len(ids))
	out := ids[:0:0]
	for _, r := range ids {
		if r <= 0 {
			return nil, fmt.Errorf("%w: recipientIds must be positive integers", hub.ErrInvalid)
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	if len(out) > MaxRecipients {
		return nil, fmt.Errorf("%w: at most %d distinct recipientIds", hub.ErrInvalid, MaxRecipients)
	}
	return out, nil
}

func joinIDs(ids []int64) string {
	b := make([]byte, 0, len(ids)*8)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(b)
}

// notice is one published event on its way into recipients' inboxes.
type notice struct {
	room      int64
	id        hub.StreamID
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

// deliverNotice puts n into each recipient's inbox (one pipelined round trip;
// on a cluster each user's script goes to that user's master), then clears its
// outbox entry. Each inbox script is idempotent, so doing this twice is safe.
func (ib *Inbox) deliverNotice(ctx context.Context, n notice, recipients []int64) error {
	ctx, cancel := hub.Detach(ctx)
	defer cancel()
	item, ms := n.item(), strconv.FormatUint(n.id.Ms, 10)
	execs := make([]rueidis.LuaExec, len(recipients))
	for i, u := range recipients {
		execs[i] = rueidis.LuaExec{Keys: inboxKeys(u),
			Args: ib.inboxArgs(u, NotificationID(n.room, n.id), n.typ, item, ms)}
	}
	results := hub.RunMany(ib.rdb, ctx, inboxAddScript, execs)
	for _, r := range results {
		arr, err := r.ToArray()
		if err != nil {
			return hub.RedisErr(err)
		}
		if kind, _ := arr[0].ToString(); kind == "new" {
			ib.metrics.inboxWrites.Inc()
		}
	}
	_, err := hub.Call(ib.rdb, ctx, ib.rdb.B().Hdel().Key(hub.OutboxKey(n.room)).Field(n.id.String()).Build(), hub.NoReply)
	return err
}
