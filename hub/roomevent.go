package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
	"unicode"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"roomhub/lua"
)

var (
	publishEventScript    = NewScript(lua.PublishEvent)
	publishPresenceScript = NewScript(lua.PublishPresence)
)

// PublishRequest is one event a backend publishes to a room.
type PublishRequest struct {
	Room           int64
	EventType      string
	Data           []byte // a JSON object
	PublisherID    int64  // 0 when none
	IdempotencyKey string // optional
	// Note, when not "", is kept with the event in the room's outbox
	// (outbox:{room}, by the publish script itself) until its owner clears
	// it: work that must follow the publish (the inbox writes) is then found
	// and finished even if this instance dies first. The owner lists the
	// room in outbox:rooms before it publishes.
	Note string
	// Body is what else makes two requests under one idempotency key the
	// same request: the owner's own fields, in a stable form.
	Body string
	// Extra, when not "", is kept with the event in history (Event.Extra)
	// for its owner (the inbox's options of a notification), never sent to
	// streams.
	Extra string
	// Span, when not nil, is the span the publish belongs to instead of its
	// context's (an ingest entry's: entries of one read share a context).
	Span trace.Span
}

// PublishResult is the answer to a publish. A duplicate (same idempotency key,
// same body) carries the first publish's id and delivery count.
type PublishResult struct {
	StreamID    string `json:"streamId"`
	DeliveredTo int64  `json:"deliveredTo"`
	Duplicate   bool   `json:"duplicate"`
	// Fanout is a topic publish's fan-out (nil: none).
	Fanout *FanoutRef `json:"fanout,omitempty"`

	Timestamp string `json:"-"` // a new event's timestamp ("" for a duplicate)
	Pending   bool   `json:"-"` // a duplicate whose Note is still kept: its follow-up was left undone
}

// FanoutRef names a topic publish's fan-out: its id and the exact number of
// its recipients.
type FanoutRef struct {
	ID         string `json:"id"`
	Recipients int64  `json:"recipients"`
}

// maxIdempotencyKey bounds an idempotency key, which becomes part of a Redis key.
const maxIdempotencyKey = 200

// Publish validates and publishes an event: one Lua script checks the
// idempotency key, numbers the event, appends it to history and publishes it.
func (h *Hub) Publish(ctx context.Context, req PublishRequest) (PublishResult, error) {
	req, err := h.CheckPublish(req)
	if err != nil {
		return PublishResult{}, err
	}
	return h.publish(ctx, req)
}

// CheckPublish validates req and returns it with its data compacted.
func (h *Hub) CheckPublish(req PublishRequest) (PublishRequest, error) {
	if !h.cfg.Publishable(req.EventType) {
		return PublishRequest{}, fmt.Errorf("%w: %q is not a publishable event type", ErrBadEventType, req.EventType)
	}
	if req.Room <= 0 {
		return PublishRequest{}, fmt.Errorf("%w: roomId must be a positive integer", ErrInvalid)
	}
	if req.PublisherID < 0 {
		return PublishRequest{}, fmt.Errorf("%w: publisherId must be a positive integer", ErrInvalid)
	}
	if err := validIdempotencyKey(req.IdempotencyKey); err != nil {
		return PublishRequest{}, err
	}
	data, err := CompactObject(req.Data)
	if err != nil {
		return PublishRequest{}, err
	}
	req.Data = data
	return req, nil
}

func validIdempotencyKey(k string) error {
	if len(k) > maxIdempotencyKey {
		return fmt.Errorf("%w: idempotencyKey is longer than %d bytes", ErrInvalid, maxIdempotencyKey)
	}
	for _, r := range k {
		if !unicode.IsPrint(r) || r == unicode.ReplacementChar {
			return fmt.Errorf("%w: idempotencyKey must be printable text", ErrInvalid)
		}
	}
	return nil
}

// PublishChecked publishes a request CheckPublish returned (its owner added
// Note, Body or Extra), without checking it again.
func (h *Hub) PublishChecked(ctx context.Context, req PublishRequest) (PublishResult, error) {
	return h.publish(ctx, req)
}

// publish runs the publish script for an already valid request.
func (h *Hub) publish(ctx context.Context, req PublishRequest) (res PublishResult, err error) {
	ctx, span := h.publishSpan(ctx, req)
	defer func() { endPublishSpan(span, res, err) }()
	ts := NowTimestamp()
	keys, args := h.publishExec(req, ts, TraceParent(span.SpanContext()))
	reply, err := h.runPublish(ctx, publishEventScript, keys, req.Room, req.EventType, ts, args...)
	if err != nil {
		return PublishResult{}, err
	}
	return h.publishResult(req, ts, reply)
}

// publishSpan starts the span of req's publish script (see Child).
func (h *Hub) publishSpan(ctx context.Context, req PublishRequest) (context.Context, trace.Span) {
	return h.Child(WithSpan(ctx, req.Span), "lua publish_event", trace.SpanKindClient,
		AttrRoom.Int64(req.Room), AttrEventType.String(req.EventType))
}

// endPublishSpan records how a publish ended on its span and ends it.
func endPublishSpan(span trace.Span, res PublishResult, err error) {
	if !span.IsRecording() {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else {
		span.SetAttributes(AttrStreamID.String(res.StreamID), attribute.Int64("roomhub.delivered_to", res.DeliveredTo),
			attribute.Bool("roomhub.duplicate", res.Duplicate))
	}
	span.End()
}

// publishExec is the event script's keys and its own arguments (after
// publish_lib.lua's) for req at ts; traceparent ("" for none) goes with the
// event to the instances that deliver it.
func (h *Hub) publishExec(req PublishRequest, ts, traceparent string) (keys, args []string) {
	keys = []string{EventsKey(req.Room), RoomSeqKey(req.Room),
		IdempotencyKey(req.Room, req.IdempotencyKey), OutboxKey(req.Room)}
	publisher := ""
	if req.PublisherID > 0 {
		publisher = strconv.FormatInt(req.PublisherID, 10)
	}
	return keys, []string{string(req.Data), publisher, bodyHash(req), boolArg(req.IdempotencyKey != ""),
		itoa(int64(h.cfg.IdempotencyTTL / time.Second)), req.Note, boolArg(h.waitsForReplicas()), req.Extra, traceparent}
}

// PublishMany publishes many valid requests (CheckPublish's) in one
// pipeline: one round trip per Redis node, each request's event script in
// the order given (so events to one room keep it). Each request's result
// or error is in its place. With PUBLISH_WAIT_REPLICAS they go one by one,
// each waiting for its replicas.
func (h *Hub) PublishMany(ctx context.Context, reqs []PublishRequest) ([]PublishResult, []error) {
	results, errs := make([]PublishResult, len(reqs)), make([]error, len(reqs))
	if h.waitsForReplicas() {
		for i, req := range reqs {
			results[i], errs[i] = h.publish(ctx, req)
		}
		return results, errs
	}
	ts := NowTimestamp()
	execs := make([]rueidis.LuaExec, len(reqs))
	spans := make([]trace.Span, len(reqs))
	for i, req := range reqs {
		_, spans[i] = h.publishSpan(ctx, req)
		keys, rest := h.publishExec(req, ts, TraceParent(spans[i].SpanContext()))
		execs[i] = rueidis.LuaExec{Keys: keys, Args: append(h.publishArgs(req.Room, req.EventType, ts), rest...)}
	}
	for i, r := range RunMany(h.rdb, ctx, publishEventScript, execs) {
		results[i], errs[i] = h.resultOf(reqs[i], ts, r)
		endPublishSpan(spans[i], results[i], errs[i])
	}
	return results, errs
}

// resultOf is the answer to req from its script's reply r in a pipeline.
func (h *Hub) resultOf(req PublishRequest, ts string, r rueidis.RedisResult) (PublishResult, error) {
	arr, err := r.ToArray()
	if err != nil {
		return PublishResult{}, RedisErr(err)
	}
	reply, err := h.parsePublish(req.Room, arr)
	if err != nil {
		return PublishResult{}, err
	}
	return h.publishResult(req, ts, reply)
}

// publishResult is the answer to req from its script's reply.
func (h *Hub) publishResult(req PublishRequest, ts string, reply publishReply) (PublishResult, error) {
	switch reply.kind {
	case "conflict":
		return PublishResult{}, ErrIdempotencyReuse
	case "new":
		h.metrics.countPublished(req.EventType)
	}
	res := PublishResult{StreamID: reply.id, DeliveredTo: reply.delivered, Duplicate: reply.kind == "dup"}
	if res.Duplicate {
		res.Pending = reply.more == 1
	} else {
		res.Timestamp = ts
	}
	return res, nil
}

// publishReply is the publish script's answer.
type publishReply struct {
	kind      string // new, dup, conflict, wait, empty
	id        string
	delivered int64
	more      int64         // presence: transitions still queued; dup: 1 while its outbox entry waits
	wait      time.Duration // presence: until the broadcast interval ends
}

// runPublish runs one of the publish scripts: the arguments publish_lib.lua
// takes, then the script's own (rest).
// With PUBLISH_WAIT_REPLICAS (one Redis or Sentinel) the event script is
// followed by WAIT on the same connection, and a publish that too few
// replicas took in PUBLISH_WAIT_MS fails with ErrNotReplicated: it is in
// history and live, but a failover could lose it; a retry with the same
// idempotency key answers once the replicas have it.
func (h *Hub) runPublish(ctx context.Context, script Script, keys []string, room int64, typ, ts string, rest ...string) (publishReply, error) {
	args := append(h.publishArgs(room, typ, ts), rest...)
	var arr []rueidis.RedisMessage
	var err error
	if script.sha1 == publishEventScript.sha1 && h.waitsForReplicas() {
		var acked int64
		arr, acked, err = runWaiting(h, ctx, publishEventScript, keys, args)
		if err == nil && acked < int64(h.cfg.PublishWaitReplicas) {
			if kind, _ := arr[0].ToString(); kind != "conflict" {
				h.metrics.NotReplicated.Inc()
				return publishReply{}, fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, acked, h.cfg.PublishWaitReplicas, h.cfg.PublishWait)
			}
		}
	} else {
		arr, err = Run(h.rdb, ctx, script, keys, args, rueidis.RedisResult.ToArray)
	}
	if err != nil {
		return publishReply{}, err
	}
	return h.parsePublish(room, arr)
}

// publishArgs are the arguments publish_lib.lua takes first.
func (h *Hub) publishArgs(room int64, typ, ts string) []string {
	return []string{
		RoomChannel(room), itoa(room), boolArg(h.sharded), typ, ts,
		itoa(h.cfg.StreamMaxLen), itoa(int64(h.cfg.HistoryRetention / time.Second)),
	}
}

// parsePublish reads the reply of a publish script to room.
func (h *Hub) parsePublish(room int64, arr []rueidis.RedisMessage) (publishReply, error) {
	var r publishReply
	if len(arr) == 0 {
		return r, fmt.Errorf("%w: empty answer from the publish script", ErrRedisReply)
	}
	r.kind, _ = arr[0].ToString()
	switch r.kind {
	case "new", "dup":
		if len(arr) < 4 {
			return r, fmt.Errorf("%w: publish script answered %d values", ErrRedisReply, len(arr))
		}
		r.id, _ = arr[1].ToString()
		r.delivered, _ = arr[2].AsInt64()
		if r.kind == "new" && r.delivered == 0 {
			h.noListenerHeard(room)
		}
		if len(arr) > 4 {
			r.more, _ = arr[4].AsInt64()
		}
	case "wait":
		ms, _ := arr[1].AsInt64()
		r.wait = time.Duration(ms) * time.Millisecond
	}
	return r, nil
}

// waitsForReplicas reports whether publishes WAIT for PUBLISH_WAIT_REPLICAS
// (one Redis or Sentinel; a cluster ignores the setting).
func (h *Hub) waitsForReplicas() bool { return h.cfg.PublishWaitReplicas > 0 && !h.sharded }

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// bodyHash identifies a request's content, to tell a retry (same body) from a
// different request reusing the idempotency key.
func bodyHash(req PublishRequest) string {
	s := sha256.New()
	fmt.Fprintf(s, "%s\x00%s\x00%d\x00%s", req.EventType, req.Data, req.PublisherID, req.Body)
	return hex.EncodeToString(s.Sum(nil))
}
