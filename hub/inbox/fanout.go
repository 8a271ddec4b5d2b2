package inbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"roomhub/hub"
	"roomhub/hub/delivery"
)

// PublishRequest is an event for a room and, with RecipientIDs, a
// notification for each of those users, with the options of their items;
// with Topic, for each of the topic's followers too, but ExcludeIDs.
type PublishRequest struct {
	hub.PublishRequest
	RecipientIDs []int64
	Topic        string
	ExcludeIDs   []int64
	Options
}

// Draft is a publish the inbox has checked, on its way: the core's request
// (its idempotency body and outbox note the recipients, its extra the
// options) and what the recipients' items need.
type Draft struct {
	Core       hub.PublishRequest
	recipients []int64
	topic      string  // "": none
	exclude    []int64 // the topic's followers it passes over
	opts       Options
}

// Notifies reports whether the draft has recipients, direct or a topic's;
// without, the publish is the core's alone.
func (d Draft) Notifies() bool { return len(d.recipients) > 0 || d.topic != "" }

// Prepare checks req (recipients, options, deliveries, then the core's
// rules) and drafts it.
func (ib *Inbox) Prepare(req PublishRequest) (Draft, error) {
	var d Draft
	var err error
	if d.recipients, err = distinctRecipients(req.RecipientIDs); err != nil {
		return Draft{}, err
	}
	if d.opts, err = req.Options.check(ib.cfg.Retention); err != nil {
		return Draft{}, err
	}
	if d.exclude, err = ib.checkTopic(req.Topic, req.ExcludeIDs); err != nil {
		return Draft{}, err
	}
	d.topic = req.Topic
	if d.opts.set() && !d.Notifies() {
		return Draft{}, fmt.Errorf("%w: severity, tags, groupKey, expiresAt, dedupeKey and delivery go with recipientIds or topic", hub.ErrInvalid)
	}
	if _, err := ib.plan(req.EventType, d.opts); err != nil {
		return Draft{}, err
	}
	if d.Core, err = ib.core.CheckPublish(req.PublishRequest); err != nil {
		return Draft{}, err
	}
	// "[1 2]", "[]" (PlainBody): the form idempotency keys were first stored with, then the options.
	d.Core.Body = fmt.Sprint(d.recipients) + d.opts.body() + topicBody(d.topic, d.exclude)
	d.Core.Note = topicNote(d.recipients, d.topic, d.exclude)
	if d.opts.set() {
		b, _ := json.Marshal(d.opts)
		d.Core.Extra = string(b) // for the outbox sweep
	}
	return d, nil
}

// OpenOutbox lists d's room among those the outbox sweep visits. Call it
// before the event exists, so that its outbox entry is always findable.
func (ib *Inbox) OpenOutbox(ctx context.Context, d Draft) error {
	return ib.touchOutboxRoom(ctx, d.Core.Room)
}

// Deliver puts d's event, published (answered res: new, or a retry of one
// whose inbox writes were left undone), into each recipient's inbox with
// its deliveries beyond the tab, after starting its fan-out to a topic's
// followers, when it names one (its reference then).
func (ib *Inbox) Deliver(ctx context.Context, d Draft, res hub.PublishResult) (*hub.FanoutRef, error) {
	n, err := ib.noticeOf(ctx, d.Core, res, d.opts)
	if err != nil {
		return nil, err
	}
	return ib.finish(ctx, n, d.recipients, d.topic, d.exclude)
}

// finish is a published notice's follow-up, the publisher's or the outbox
// sweep's: the fan-out to topic's followers started (topic "": none), the
// direct recipients' writes, then its outbox entry cleared.
func (ib *Inbox) finish(ctx context.Context, n notice, recipients []int64, topic string, exclude []int64) (*hub.FanoutRef, error) {
	var ref *hub.FanoutRef
	if topic != "" {
		if ib.fanouts == nil {
			return nil, fmt.Errorf("%w: a topic publish where topics are not served", hub.ErrInvalid)
		}
		var err error
		if ref, err = ib.startFanout(ctx, n, topic, exclude, recipients); err != nil {
			return nil, err
		}
	}
	if err := ib.deliverTo(ctx, n, recipients); err != nil {
		return nil, err
	}
	_, err := hub.Call(ib.rdb, ctx, ib.rdb.B().Hdel().Key(hub.OutboxKey(n.room)).Field(n.id.String()).Build(), hub.NoReply)
	return ref, err
}

// noticeOf is the published event p (answered res) on its way into
// inboxes; a duplicate's timestamp is its first publish's.
func (ib *Inbox) noticeOf(ctx context.Context, p hub.PublishRequest, res hub.PublishResult, opts Options) (notice, error) {
	id, err := hub.ParseStreamID(res.StreamID)
	if err != nil {
		return notice{}, fmt.Errorf("%w: publish id %q", hub.ErrRedisReply, res.StreamID)
	}
	ts := res.Timestamp
	if res.Duplicate {
		ev, err := ib.core.EventAt(ctx, p.Room, id)
		if err != nil {
			return notice{}, err
		}
		ts = ev.Timestamp
	}
	publisher := ""
	if p.PublisherID > 0 {
		publisher = strconv.FormatInt(p.PublisherID, 10)
	}
	return notice{room: p.Room, id: id, typ: p.EventType, data: p.Data, publisher: publisher, ts: ts, opts: opts}, nil
}

// Plain reports whether req notifies no one: no recipients, no topic, no
// options. Such a publish is the core's alone; its idempotency body is
// PlainBody.
func (req PublishRequest) Plain() bool {
	return len(req.RecipientIDs) == 0 && req.Topic == "" && len(req.ExcludeIDs) == 0 && !req.Options.set()
}

// PlainBody is the idempotency body of a publish that notifies no one, as
// Publish stores it (fmt.Sprint of no recipients: the form idempotency
// keys were first stored with), so that either path answers a repeat of it
// as a duplicate.
const PlainBody = "[]"

// distinctRecipients checks recipient ids and drops repeats, keeping the order.
func distinctRecipients(ids []int64) ([]int64, error) {
	return distinctIDs(ids, "recipientIds", MaxRecipients)
}

// distinctIDs checks the ids of field (positive, at most max distinct) and
// drops repeats, keeping the order.
func distinctIDs(ids []int64, field string, max int) ([]int64, error) {
	seen := make(map[int64]bool, min(len(ids), max+1))
	out := ids[:0:0]
	for _, r := range ids {
		if r <= 0 {
			return nil, fmt.Errorf("%w: %s must be positive integers", hub.ErrInvalid, field)
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	if len(out) > max {
		return nil, fmt.Errorf("%w: at most %d distinct %s", hub.ErrInvalid, max, field)
	}
	return out, nil
}

// notice is one published event on its way into recipients' inboxes.
type notice struct {
	room      int64
	id        hub.StreamID
	typ       string
	data      []byte
	publisher string // "" when none
	ts        string
	opts      Options
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

// addBatch bounds the recipients one inbox_add.lua call serves on one
// Redis (a cluster's calls serve one recipient each: their keys share no
// slot).
const addBatch = 20

// deliverTo puts n into each recipient's inbox (pipelines of
// fanoutPipeline calls; on a cluster each user's call goes to that user's
// master). A plain notification goes first by
// the fan-out's own script, which leaves the recipients it does not take to
// the general one. Each inbox write is idempotent, so doing this twice is
// safe.
func (ib *Inbox) deliverTo(ctx context.Context, n notice, recipients []int64) (err error) {
	if len(recipients) == 0 {
		return nil
	}
	// Not abandoned when the caller goes (see hub.Detach), and not bounded as
	// a whole: each of its calls has Redis' time limit, and a big fan-out is
	// many bounded calls.
	ctx = context.WithoutCancel(ctx)
	ctx, span := ib.core.Child(ctx, "lua inbox_add", trace.SpanKindClient, hub.AttrRoom.Int64(n.room),
		hub.AttrStreamID.String(n.id.String()), attribute.Int("roomhub.recipients", len(recipients)))
	written := 0
	defer func() {
		span.SetAttributes(attribute.Int("roomhub.inbox_writes", written))
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	plan, err := ib.plan(n.typ, n.opts)
	if err != nil {
		return err
	}
	if !plan.Empty() {
		// Listed before they exist: every record is findable by its notification.
		if err := ib.delivery.MarkNotification(ctx, n.room, n.id.String(), recipients, plan); err != nil {
			return err
		}
	}
	if n.opts.ExpiresAt != nil {
		if err := ib.markTimers(ctx, recipients, strconv.FormatInt(n.opts.ExpiresAt.UnixMilli(), 10)); err != nil {
			return err
		}
	}
	tp := hub.TraceParent(span.SpanContext())
	var t addTally
	rest := recipients
	if n.opts.plain() && ib.layout() != "" {
		// the common case first, by its own script; the rest after
		execs, groups := ib.plainExecs(n, recipients, plan, tp)
		if rest, err = ib.runAdds(ctx, inboxAddPlainScript, execs, groups, !plan.Empty(), &t); err != nil {
			return err
		}
	}
	if len(rest) > 0 {
		execs, groups := ib.addExecs(n, rest, plan, tp)
		if _, err := ib.runAdds(ctx, inboxAddScript, execs, groups, !plan.Empty(), &t); err != nil {
			return err
		}
	}
	written = t.written
	if !plan.Empty() {
		ib.delivery.CountScheduled(plan, t.scheduled)
		// After the records: the index never points at what is not there yet.
		if err := ib.delivery.Index(ctx, t.users, t.dues, NotificationID(n.room, n.id)); err != nil {
			return err
		}
	}
	return nil
}

// addTally is what the add scripts of one notification answered: each
// recipient they took (users) with the earliest due time of its deliveries
// (dues, -1 for none), the inbox items written, and the recipients whose
// deliveries were scheduled.
type addTally struct {
	users              []int64
	dues               []int64
	written, scheduled int
}

// runAdds runs an add script's calls (groups[i] the recipients of
// execs[i]), one after the other, and tallies their answers in t. It
// returns the recipients the script left to inbox_add.lua ("more").
func (ib *Inbox) runAdds(ctx context.Context, script hub.Script, execs []rueidis.LuaExec, groups [][]int64,
	withPlan bool, t *addTally) (more []int64, err error) {
	for i, r := range hub.RunChunked(ib.rdb, ctx, script, execs, ib.fanoutPipeline()) {
		out, err := r.AsStrSlice()
		if err != nil {
			return nil, hub.RedisErr(err)
		}
		users := groups[i]
		if len(out) != len(users)*(1+boolInt(withPlan)) {
			return nil, fmt.Errorf("%w: inbox add answered %d values for %d recipients", hub.ErrRedisReply, len(out), len(users))
		}
		for j, k := range out[:len(users)] {
			switch k {
			case "more":
				more = append(more, users[j])
				continue
			case "new", "joined":
				ib.metrics.inboxWrites.Inc()
				t.scheduled++
				t.written++
			case "muted":
				t.scheduled++
			}
			if withPlan {
				ms, err := strconv.ParseInt(out[len(users)+j], 10, 64)
				if err != nil {
					ms = -1
				}
				t.users, t.dues = append(t.users, users[j]), append(t.dues, ms)
			}
		}
	}
	return more, nil
}

// addExecs are the inbox_add.lua calls that put n into recipients' inboxes,
// with the recipients of each: addBatch recipients a call on one Redis, one
// on a cluster (their keys share no slot); each recipient's inbox keys, the
// delivery keys too when plan has deliveries, and traceparent ("" for none)
// for their records.
func (ib *Inbox) addExecs(n notice, recipients []int64, plan delivery.Plan, traceparent string) ([]rueidis.LuaExec, [][]int64) {
	window := n.opts.GroupWindowSecs
	if window == 0 {
		window = DefaultGroupWindowSecs
	}
	sev, tags, exp := n.opts.fields()
	expMs := ""
	if n.opts.ExpiresAt != nil {
		expMs = strconv.FormatInt(n.opts.ExpiresAt.UnixMilli(), 10)
	}
	common := ib.scriptArgs("", hub.NowTimestamp(), NotificationID(n.room, n.id), n.typ, n.item(),
		strconv.FormatUint(n.id.Ms, 10), sev, tags, exp, expMs, n.opts.GroupKey, strconv.Itoa(window*1000), n.publisher)
	common = append(common, plan.ScheduleArgs(traceparent)...)
	return ib.batchExecs(common, recipients, plan, inboxKeys)
}

// plainExecs are the inbox_add_plain.lua calls for n, batched as addExecs.
func (ib *Inbox) plainExecs(n notice, recipients []int64, plan delivery.Plan, traceparent string) ([]rueidis.LuaExec, [][]int64) {
	unheard := "1" // an event nobody hears may go unsent: NUMSUB counts every listener
	if ib.coreCfg.PubSubMode == hub.PubSubPatterns {
		unheard = ""
	}
	common := ib.scriptArgs(unheard, hub.NowTimestamp(), NotificationID(n.room, n.id), n.typ, n.item(),
		strconv.FormatUint(n.id.Ms, 10))
	common = append(common, plan.ScheduleArgs(traceparent)...)
	return ib.batchExecs(common, recipients, plan, plainKeys)
}

// batchExecs are calls of an add script taking common, then each
// recipient's channel: keys(u) and the delivery keys when plan has
// deliveries, addBatch recipients a call (one on a cluster).
func (ib *Inbox) batchExecs(common []string, recipients []int64, plan delivery.Plan, keys func(int64) []string) ([]rueidis.LuaExec, [][]int64) {
	batch := addBatch
	if ib.rdb.Sharded() {
		batch = 1
	}
	perUser := len(keys(0)) + len(delivery.ScheduleKeys(0))
	var execs []rueidis.LuaExec
	var groups [][]int64
	for start := 0; start < len(recipients); start += batch {
		users := recipients[start:min(start+batch, len(recipients))]
		e := rueidis.LuaExec{Keys: make([]string, 0, perUser*len(users)), Args: make([]string, 0, len(common)+len(users))}
		e.Args = append(e.Args, common...)
		for _, u := range users {
			e.Keys = append(e.Keys, keys(u)...)
			if !plan.Empty() {
				e.Keys = append(e.Keys, delivery.ScheduleKeys(u)...)
			}
			e.Args = append(e.Args, hub.UserChannel(u))
		}
		execs, groups = append(execs, e), append(groups, users)
	}
	return execs, groups
}

// fanoutPipeline bounds the add calls of one pipeline. On one Redis a
// fan-out to 10,000 recipients is 500 calls of 20 recipients, sent two at
// a time, each pair when the one before has answered (hub.RunChunked): half
// the round trips in which Redis waits on the hub, while another client
// waits behind two calls at most (~1 ms: a plain call is ~0.4 ms), never
// behind a long pipeline of them. Each call has its own time limit, so a
// big fan-out never meets the limit as a whole. Measured
// (docs/performance.md, issue 55): 1,000 recipients answer in 22–28 ms
// with two against 24–40 with one, while another user's GET
// /notifications/unread during a 10,000-recipient fan-out has a p99 of
// 2.8–3.8 ms against 2.3–3.1. On a cluster a call is one recipient's (their
// keys share a slot), and the pipeline spreads over the masters: 4 there.
func (ib *Inbox) fanoutPipeline() int {
	if ib.rdb.Sharded() {
		return 4
	}
	return 2
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// plan is the deliveries a notice schedules per recipient: none without
// deliveries configured.
func (ib *Inbox) plan(eventType string, o Options) (delivery.Plan, error) {
	if ib.delivery == nil {
		if o.Delivery != nil && len(*o.Delivery) > 0 {
			return delivery.Plan{}, fmt.Errorf("%w: delivery names channels, and none is configured (DELIVERY_CHANNELS)", hub.ErrInvalid)
		}
		return delivery.Plan{}, nil
	}
	return ib.delivery.Plan(eventType, o.Options)
}
