package publish

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"roomhub/hub"
	"roomhub/hub/delivery"
	"roomhub/hub/inbox"
	"roomhub/hub/topics"
	"roomhub/internal/strictjson"
)

// BodyHeadway is how much larger than PUBLISH_MAX_BYTES a whole publish
// body may be: room for 10,000 recipients and the other fields.
const BodyHeadway = 256 << 10

// MaxBody is the most bytes a publish body (or an ingest entry) may hold
// when its data may hold maxData.
func MaxBody(maxData int64) int64 { return maxData + BodyHeadway }

// Refusal is a publish refused for what it says: a code of DESIGN's table
// (COMMON400, NOTIF4001, NOTIF4091, COMMON413) and a message the sender may
// be shown. Sent again, it is refused again.
type Refusal struct {
	Code, Message string
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Message }

func badRequest(msg string) *Refusal { return &Refusal{"COMMON400", msg} }

// RefusalOf is err as a refusal, when it is one: a Refusal, or one of the
// domain's errors that say the publish itself is wrong (a bad field, an
// event type that may not be published, an idempotency key reused with
// another body). Anything else failed for want of Redis.
func RefusalOf(err error) (*Refusal, bool) {
	var r *Refusal
	switch {
	case err == nil:
		return nil, false
	case errors.As(err, &r):
		return r, true
	case errors.Is(err, hub.ErrBadEventType):
		return &Refusal{"NOTIF4001", err.Error()}, true
	case errors.Is(err, hub.ErrIdempotencyReuse):
		return &Refusal{"NOTIF4091", "idempotency key reused with a different body"}, true
	case errors.Is(err, hub.ErrInvalid):
		return badRequest(err.Error()), true
	}
	return nil, false
}

// fields is the publish request as sent; pointers tell missing from zero.
type fields struct {
	RoomID         *int64          `json:"roomId"`
	EventType      *string         `json:"eventType"`
	Data           json.RawMessage `json:"data"`
	PublisherID    *int64          `json:"publisherId"`
	IdempotencyKey *string         `json:"idempotencyKey"`
	RecipientIDs   []int64         `json:"recipientIds"`
	Topic          *string         `json:"topic"`
	ExcludeIDs     []int64         `json:"excludeIds"`
	Severity       *string         `json:"severity"`
	Tags           []string        `json:"tags"`
	ExpiresAt      *string         `json:"expiresAt"`
	GroupKey       *string         `json:"groupKey"`
	GroupWindow    *int            `json:"groupWindowSecs"`
	DedupeKey      *string         `json:"dedupeKey"`
	DedupeWindow   *int            `json:"dedupeWindowSecs"`
	Delivery       json.RawMessage `json:"delivery"`
}

// Decode parses and checks a publish body; a body it refuses is a
// *Refusal. Its data may hold at most maxData bytes (0: any).
func Decode(body []byte, maxData int64) (inbox.PublishRequest, error) {
	req, err := decode(body)
	if err == nil && maxData > 0 && int64(len(req.Data)) > maxData {
		return req, &Refusal{"COMMON413", "data is larger than PUBLISH_MAX_BYTES (" + strconv.FormatInt(maxData, 10) + " bytes)"}
	}
	return req, err
}

func decode(body []byte) (inbox.PublishRequest, error) {
	var b fields
	if err := strictjson.Decode(body, &b); err != nil {
		if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) && te.Field == "eventType" {
			return inbox.PublishRequest{}, &Refusal{"NOTIF4001", "eventType must be a string"}
		}
		return inbox.PublishRequest{}, badRequest(strictjson.Problem(err))
	}
	if b.RoomID == nil || *b.RoomID <= 0 {
		return inbox.PublishRequest{}, badRequest("roomId must be a positive integer")
	}
	if b.EventType == nil || *b.EventType == "" {
		return inbox.PublishRequest{}, &Refusal{"NOTIF4001", "eventType is required"}
	}
	if len(b.Data) == 0 || b.Data[0] != '{' {
		return inbox.PublishRequest{}, badRequest("data must be a JSON object")
	}
	req := inbox.PublishRequest{PublishRequest: hub.PublishRequest{Room: *b.RoomID, EventType: *b.EventType, Data: b.Data}, RecipientIDs: b.RecipientIDs}
	if b.PublisherID != nil {
		if *b.PublisherID <= 0 {
			return inbox.PublishRequest{}, badRequest("publisherId must be a positive integer")
		}
		req.PublisherID = *b.PublisherID
	}
	if b.IdempotencyKey != nil {
		req.IdempotencyKey = *b.IdempotencyKey
	}
	if err := b.topic(&req); err != nil {
		return inbox.PublishRequest{}, err
	}
	if b.Severity != nil {
		if *b.Severity == "" {
			return inbox.PublishRequest{}, badRequest("severity must be one of low, normal, high, critical")
		}
		req.Severity = *b.Severity
	}
	req.Tags = b.Tags
	if b.GroupKey != nil {
		if *b.GroupKey == "" {
			return inbox.PublishRequest{}, badRequest("groupKey is 1 to 64 bytes of [A-Za-z0-9_.:-]")
		}
		req.GroupKey = *b.GroupKey
	}
	if b.GroupWindow != nil {
		if *b.GroupWindow <= 0 {
			return inbox.PublishRequest{}, badRequest("groupWindowSecs must be 1 to " + strconv.Itoa(inbox.MaxGroupWindowSecs))
		}
		req.GroupWindowSecs = *b.GroupWindow
	}
	if b.DedupeKey != nil {
		if *b.DedupeKey == "" {
			return inbox.PublishRequest{}, badRequest("dedupeKey is 1 to 128 bytes of [A-Za-z0-9_.:-]")
		}
		req.DedupeKey = *b.DedupeKey
	}
	if b.DedupeWindow != nil {
		if *b.DedupeWindow <= 0 {
			return inbox.PublishRequest{}, badRequest("dedupeWindowSecs must be 1 to " + strconv.Itoa(delivery.MaxDedupeWindow))
		}
		req.DedupeWindowSecs = *b.DedupeWindow
	}
	if len(b.Delivery) > 0 && string(b.Delivery) != "null" {
		rs, err := delivery.ParseOverride(b.Delivery)
		if err != nil {
			return inbox.PublishRequest{}, badRequest(strings.TrimPrefix(err.Error(), hub.ErrInvalid.Error()+": "))
		}
		req.Delivery = &rs
	}
	if b.ExpiresAt != nil {
		t, err := time.Parse(time.RFC3339, *b.ExpiresAt)
		if err != nil {
			return inbox.PublishRequest{}, badRequest("expiresAt must be an RFC 3339 time")
		}
		req.ExpiresAt = &t
	}
	return req, nil
}

// topic puts the body's topic (checked) and excluded ids (checked with the
// draft: inbox.Prepare) into req.
func (b fields) topic(req *inbox.PublishRequest) error {
	if b.Topic != nil {
		if err := topics.CheckKey(*b.Topic); err != nil {
			return badRequest(strings.TrimPrefix(err.Error(), hub.ErrInvalid.Error()+": "))
		}
		req.Topic = *b.Topic
	}
	req.ExcludeIDs = b.ExcludeIDs
	return nil
}
