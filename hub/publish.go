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

	"roomhub/lua"
)

var publishScript = rueidis.NewLuaScript(lua.Publish)

// PublishRequest is one event a backend publishes to a room.
type PublishRequest struct {
	Room           int64
	EventType      string
	Data           []byte // a JSON object
	PublisherID    int64  // 0 when none
	IdempotencyKey string // optional
	RecipientIDs   []int64
}

// PublishResult is the answer to a publish. A duplicate (same idempotency key,
// same body) carries the first publish's id and delivery count.
type PublishResult struct {
	StreamID    string `json:"streamId"`
	DeliveredTo int64  `json:"deliveredTo"`
	Duplicate   bool   `json:"duplicate"`
}

// maxIdempotencyKey bounds an idempotency key, which becomes part of a Redis key.
const maxIdempotencyKey = 200

// Publish validates and publishes an event: one Lua script checks the
// idempotency key, numbers the event, appends it to history and publishes it.
func (h *Hub) Publish(ctx context.Context, req PublishRequest) (PublishResult, error) {
	if !h.eventTypeAllowed(req.EventType) {
		return PublishResult{}, fmt.Errorf("%w: %q is not a publishable event type", ErrBadEventType, req.EventType)
	}
	if req.Room <= 0 {
		return PublishResult{}, fmt.Errorf("%w: roomId must be a positive integer", ErrInvalid)
	}
	if req.PublisherID < 0 {
		return PublishResult{}, fmt.Errorf("%w: publisherId must be a positive integer", ErrInvalid)
	}
	if err := validIdempotencyKey(req.IdempotencyKey); err != nil {
		return PublishResult{}, err
	}
	for _, r := range req.RecipientIDs {
		if r <= 0 {
			return PublishResult{}, fmt.Errorf("%w: recipientIds must be positive integers", ErrInvalid)
		}
	}
	data, err := CompactObject(req.Data)
	if err != nil {
		return PublishResult{}, err
	}
	req.Data = data
	return h.publish(ctx, req)
}

func (h *Hub) eventTypeAllowed(t string) bool {
	for _, a := range h.cfg.EventTypes {
		if a == t {
			return true
		}
	}
	return false
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

// publish runs the publish script for an already valid request.
func (h *Hub) publish(ctx context.Context, req PublishRequest) (PublishResult, error) {
	keys := []string{EventsKey(req.Room), SeqKey(req.Room)}
	if req.IdempotencyKey != "" {
		keys = append(keys, IdempotencyKey(req.Room, req.IdempotencyKey))
	}
	publisher := ""
	if req.PublisherID > 0 {
		publisher = strconv.FormatInt(req.PublisherID, 10)
	}
	reply, err := h.runPublish(ctx, keys, req.Room, req.EventType, string(req.Data), publisher, bodyHash(req), "event")
	if err != nil {
		return PublishResult{}, err
	}
	switch reply.kind {
	case "conflict":
		return PublishResult{}, ErrIdempotencyReuse
	case "new":
		h.metrics.countPublished(req.EventType)
	}
	return PublishResult{StreamID: reply.id, DeliveredTo: reply.delivered, Duplicate: reply.kind == "dup"}, nil
}

// publishReply is the publish script's answer.
type publishReply struct {
	kind      string // new, dup, conflict, wait, empty
	id        string
	delivered int64
	more      int64         // presence: transitions still queued
	wait      time.Duration // presence: until the broadcast interval ends
}

// runPublish runs lua/publish.lua; mode is "event" or "presence".
func (h *Hub) runPublish(ctx context.Context, keys []string, room int64, typ, data, publisher, hash, mode string) (publishReply, error) {
	args := []string{
		RoomChannel(room), typ, data, publisher, nowTimestamp(),
		itoa(h.cfg.StreamMaxLen), itoa(int64(h.cfg.IdempotencyTTL / time.Second)),
		hash, itoa(room), boolArg(h.sharded), mode,
		itoa(h.cfg.PresenceBroadcast.Milliseconds()), itoa(int64(h.cfg.PresenceListMax)),
	}
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	start := time.Now()
	arr, err := publishScript.Exec(ctx, h.rdb, keys, args).ToArray()
	h.metrics.observeRedis(start)
	if err != nil {
		return publishReply{}, redisErr(err)
	}
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
		if len(arr) > 4 {
			r.more, _ = arr[4].AsInt64()
		}
	case "wait":
		ms, _ := arr[1].AsInt64()
		r.wait = time.Duration(ms) * time.Millisecond
	}
	return r, nil
}

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
	fmt.Fprintf(s, "%s\x00%s\x00%d\x00%v", req.EventType, req.Data, req.PublisherID, req.RecipientIDs)
	return hex.EncodeToString(s.Sum(nil))
}
