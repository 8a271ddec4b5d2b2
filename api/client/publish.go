package client

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Event is one publish (api/openapi.yaml's PublishRequest): a room's event
// and, with RecipientIDs, an inbox item for each recipient; with Topic, for
// each of the topic's followers too (but ExcludeIDs), fanned out by the hub
// in the background (Result.Fanout).
type Event struct {
	RoomID         int64    `json:"roomId"`
	EventType      string   `json:"eventType"`
	Data           any      `json:"data"`
	PublisherID    int64    `json:"publisherId,omitempty"`
	IdempotencyKey string   `json:"idempotencyKey,omitempty"`
	RecipientIDs   []int64  `json:"recipientIds,omitempty"`
	Topic          string   `json:"topic,omitempty"`
	ExcludeIDs     []int64  `json:"excludeIds,omitempty"` // at most 100, only with Topic
	Severity       string   `json:"severity,omitempty"`   // low, normal, high, critical
	Tags           []string `json:"tags,omitempty"`
	// ExpiresAt is when the recipients' items leave their lists (zero: never).
	ExpiresAt        time.Time `json:"-"`
	GroupKey         string    `json:"groupKey,omitempty"`
	GroupWindowSecs  int       `json:"groupWindowSecs,omitempty"`
	DedupeKey        string    `json:"dedupeKey,omitempty"`
	DedupeWindowSecs int       `json:"dedupeWindowSecs,omitempty"`
	// Delivery replaces DELIVERY_RULES of the event type for this publish:
	// channel → rule (an empty, non-nil map: none).
	Delivery map[string]Rule `json:"delivery,omitempty"`
}

// MarshalJSON writes e as the hub reads it (expiresAt in RFC 3339, when set).
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	var exp *string
	if !e.ExpiresAt.IsZero() {
		s := e.ExpiresAt.UTC().Format(time.RFC3339Nano)
		exp = &s
	}
	if e.Data == nil {
		e.Data = map[string]any{}
	}
	return json.Marshal(struct {
		plain
		ExpiresAt *string `json:"expiresAt,omitempty"`
	}{plain(e), exp})
}

// Rule is one channel's delivery rule.
type Rule struct {
	AfterSecs     int    `json:"afterSecs,omitempty"`
	Unless        string `json:"unless,omitempty"` // seen, read or none
	OnlyIfOffline bool   `json:"onlyIfOffline,omitempty"`
	DigestSecs    int    `json:"digestSecs,omitempty"`
}

// Result is what a publish did: the event's stream id, whether it was a
// duplicate of an earlier publish of its idempotency key, and how many
// streams it reached on the instance that answered.
type Result struct {
	StreamID    string `json:"streamId"`
	Duplicate   bool   `json:"duplicate"`
	DeliveredTo int    `json:"deliveredTo"`
	// Fanout is a topic publish's fan-out (nil without a topic).
	Fanout *FanoutRef `json:"fanout,omitempty"`
}

// FanoutRef names a topic publish's fan-out: its id (for Client.Fanout)
// and its exact recipients.
type FanoutRef struct {
	ID         string `json:"id"`
	Recipients int64  `json:"recipients"`
}

// NotificationID is the recipients' items' id: "<roomId>:<streamId>".
func (r Result) NotificationID(roomID int64) string { return itoa64(roomID) + ":" + r.StreamID }

// Publish publishes one event (POST /api/v1/notifications/publish).
func (c *Client) Publish(ctx context.Context, e Event) (Result, error) {
	var r Result
	err := c.call(ctx, "POST", "/api/v1/notifications/publish", e, &r)
	return r, err
}

// statusOf is the HTTP status the hub answers code with when the event is
// published alone (DESIGN's table of codes): an entry of a batch carries its
// code alone, so that Temporary tells a REDIS5001 from a COMMON400 there too.
func statusOf(code string) int {
	switch code {
	case "REDIS5001", "AUTH5031":
		return http.StatusServiceUnavailable
	case "ROOM4041":
		return http.StatusNotFound
	}
	digits := strings.TrimLeft(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
	if n, err := strconv.Atoi(digits[:min(3, len(digits))]); err == nil && n >= 400 && n < 600 {
		return n
	}
	return http.StatusInternalServerError
}

// BatchResult is one event's answer in a batch: its Result, or its refusal.
type BatchResult struct {
	Result Result
	Err    *Error
}

// PublishBatch publishes up to 500 events at once, each answered as it
// would be alone, in the order sent (POST /api/v1/notifications/publish/batch).
func (c *Client) PublishBatch(ctx context.Context, events []Event) ([]BatchResult, error) {
	var raw struct {
		Results []struct {
			IsSuccess bool   `json:"isSuccess"`
			Result    Result `json:"result"`
			Code      string `json:"code"`
			Message   string `json:"message"`
		} `json:"results"`
	}
	if err := c.call(ctx, "POST", "/api/v1/notifications/publish/batch", map[string]any{"events": events}, &raw); err != nil {
		return nil, err
	}
	out := make([]BatchResult, len(raw.Results))
	for i, r := range raw.Results {
		if r.IsSuccess {
			out[i].Result = r.Result
		} else {
			out[i].Err = &Error{Status: statusOf(r.Code), Code: r.Code, Message: r.Message}
		}
	}
	return out, nil
}
