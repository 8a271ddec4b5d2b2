package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/errgroup"

	"roomhub/hub"
	"roomhub/hub/delivery"
	"roomhub/hub/inbox"
)

// publishBody is the publish request as sent; pointers tell missing from zero.
type publishBody struct {
	RoomID         *int64          `json:"roomId"`
	EventType      *string         `json:"eventType"`
	Data           json.RawMessage `json:"data"`
	PublisherID    *int64          `json:"publisherId"`
	IdempotencyKey *string         `json:"idempotencyKey"`
	RecipientIDs   []int64         `json:"recipientIds"`
	Severity       *string         `json:"severity"`
	Tags           []string        `json:"tags"`
	ExpiresAt      *string         `json:"expiresAt"`
	GroupKey       *string         `json:"groupKey"`
	GroupWindow    *int            `json:"groupWindowSecs"`
	DedupeKey      *string         `json:"dedupeKey"`
	DedupeWindow   *int            `json:"dedupeWindowSecs"`
	Delivery       json.RawMessage `json:"delivery"`
}

// DecodePublish parses and checks a publish body. Errors are *Error values
// with the code DESIGN.md gives (COMMON400, NOTIF4001).
func DecodePublish(body []byte) (inbox.PublishRequest, error) {
	var b publishBody
	if err := decodeJSON(body, &b); err != nil {
		if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) && te.Field == "eventType" {
			return inbox.PublishRequest{}, &Error{http.StatusBadRequest, "NOTIF4001", "eventType must be a string", nil}
		}
		return inbox.PublishRequest{}, jsonError(err)
	}
	if b.RoomID == nil || *b.RoomID <= 0 {
		return inbox.PublishRequest{}, errBadRequest("roomId must be a positive integer")
	}
	if b.EventType == nil || *b.EventType == "" {
		return inbox.PublishRequest{}, &Error{http.StatusBadRequest, "NOTIF4001", "eventType is required", nil}
	}
	if len(b.Data) == 0 || b.Data[0] != '{' {
		return inbox.PublishRequest{}, errBadRequest("data must be a JSON object")
	}
	req := inbox.PublishRequest{PublishRequest: hub.PublishRequest{Room: *b.RoomID, EventType: *b.EventType, Data: b.Data}, RecipientIDs: b.RecipientIDs}
	if b.PublisherID != nil {
		if *b.PublisherID <= 0 {
			return inbox.PublishRequest{}, errBadRequest("publisherId must be a positive integer")
		}
		req.PublisherID = *b.PublisherID
	}
	if b.IdempotencyKey != nil {
		req.IdempotencyKey = *b.IdempotencyKey
	}
	if b.Severity != nil {
		if *b.Severity == "" {
			return inbox.PublishRequest{}, errBadRequest("severity must be one of low, normal, high, critical")
		}
		req.Severity = *b.Severity
	}
	req.Tags = b.Tags
	if b.GroupKey != nil {
		if *b.GroupKey == "" {
			return inbox.PublishRequest{}, errBadRequest("groupKey is 1 to 64 bytes of [A-Za-z0-9_.:-]")
		}
		req.GroupKey = *b.GroupKey
	}
	if b.GroupWindow != nil {
		if *b.GroupWindow <= 0 {
			return inbox.PublishRequest{}, errBadRequest("groupWindowSecs must be 1 to 86400")
		}
		req.GroupWindowSecs = *b.GroupWindow
	}
	if b.DedupeKey != nil {
		if *b.DedupeKey == "" {
			return inbox.PublishRequest{}, errBadRequest("dedupeKey is 1 to 128 bytes of [A-Za-z0-9_.:-]")
		}
		req.DedupeKey = *b.DedupeKey
	}
	if b.DedupeWindow != nil {
		if *b.DedupeWindow <= 0 {
			return inbox.PublishRequest{}, errBadRequest("dedupeWindowSecs must be 1 to 604800")
		}
		req.DedupeWindowSecs = *b.DedupeWindow
	}
	if len(b.Delivery) > 0 && string(b.Delivery) != "null" {
		rs, err := delivery.ParseOverride(b.Delivery)
		if err != nil {
			return inbox.PublishRequest{}, errBadRequest(strings.TrimPrefix(err.Error(), hub.ErrInvalid.Error()+": "))
		}
		req.Delivery = &rs
	}
	if b.ExpiresAt != nil {
		t, err := time.Parse(time.RFC3339, *b.ExpiresAt)
		if err != nil {
			return inbox.PublishRequest{}, errBadRequest("expiresAt must be an RFC 3339 time")
		}
		req.ExpiresAt = &t
	}
	return req, nil
}

func fieldName(f string) string {
	if f == "" {
		return "body"
	}
	return f
}

func (s *Server) publish(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	res, err := s.publishOne(c.Request().Context(), body)
	if err != nil {
		return err
	}
	return ok(c, res)
}

// publishOne decodes, checks and publishes one publish body.
func (s *Server) publishOne(ctx context.Context, body []byte) (hub.PublishResult, error) {
	req, err := s.decodeSized(body)
	if err != nil {
		return hub.PublishResult{}, err
	}
	return s.inbox.Publish(ctx, req)
}

// decodeSized decodes a publish body and bounds its data by PUBLISH_MAX_BYTES.
func (s *Server) decodeSized(body []byte) (inbox.PublishRequest, error) {
	req, err := DecodePublish(body)
	if err != nil {
		return req, err
	}
	if n := int64(len(req.Data)); n > s.cfg.PublishMaxBytes {
		return req, &Error{http.StatusRequestEntityTooLarge, "COMMON413",
			"data is larger than PUBLISH_MAX_BYTES (" + strconv.FormatInt(s.cfg.PublishMaxBytes, 10) + " bytes)", nil}
	}
	return req, nil
}

// MaxBatch bounds the events of one batch publish.
const MaxBatch = 500

// batchConcurrency bounds the rooms one batch publishes to at once.
const batchConcurrency = 16

// batchResult is one event's answer in a batch: exactly what that publish
// alone would have answered.
type batchResult struct {
	IsSuccess bool               `json:"isSuccess"`
	Result    *hub.PublishResult `json:"result,omitempty"`
	Code      string             `json:"code,omitempty"`
	Message   string             `json:"message,omitempty"`
}

// publishBatch serves POST /notifications/publish/batch {"events":[…]}:
// each event is answered as POST /notifications/publish would answer it
// alone (one failing stops none of the others); events to one room go out
// in their order in the batch. Rooms whose events notify no one share one
// pipeline; the others go side by side, an event at a time per room.
func (s *Server) publishBatch(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if len(req.Events) == 0 || len(req.Events) > MaxBatch {
		return errBadRequest(fmt.Sprintf("events must hold 1 to %d publish bodies", MaxBatch))
	}
	results := make([]batchResult, len(req.Events))
	answer := func(i int, res hub.PublishResult, err error) {
		if err != nil {
			e := toError(err)
			if e.Status >= 500 {
				s.log.Error("batch publish event failed", "index", i, "code", e.Code, "err", err)
			}
			results[i] = batchResult{Code: e.Code, Message: e.Message}
			return
		}
		results[i] = batchResult{IsSuccess: true, Result: &res}
	}
	// Each event decoded and checked as it would be alone; then the rooms
	// whose events notify no one go out in one pipeline (in batch order),
	// the others one event at a time per room, rooms side by side.
	decoded := make([]inbox.PublishRequest, len(req.Events))
	byRoom := map[int64][]int{}
	plainRoom := map[int64]bool{}
	var rooms []int64
	for i, raw := range req.Events {
		r, err := s.decodeSized(raw)
		if err != nil {
			answer(i, hub.PublishResult{}, err)
			continue
		}
		decoded[i] = r
		if _, ok := byRoom[r.Room]; !ok {
			rooms = append(rooms, r.Room)
			plainRoom[r.Room] = true
		}
		byRoom[r.Room] = append(byRoom[r.Room], i)
		plainRoom[r.Room] = plainRoom[r.Room] && r.Plain()
	}
	ctx := c.Request().Context()
	var plain []inbox.PublishRequest
	var plainAt []int
	var g errgroup.Group
	g.SetLimit(batchConcurrency)
	for _, room := range rooms {
		if plainRoom[room] {
			for _, i := range byRoom[room] {
				plain, plainAt = append(plain, decoded[i]), append(plainAt, i)
			}
			continue
		}
		g.Go(func() error {
			for _, i := range byRoom[room] {
				res, err := s.inbox.Publish(ctx, decoded[i])
				answer(i, res, err)
			}
			return nil
		})
	}
	if len(plain) > 0 {
		g.Go(func() error {
			res, errs := s.inbox.PublishPlain(ctx, plain)
			for j, i := range plainAt {
				answer(i, res[j], errs[j])
			}
			return nil
		})
	}
	_ = g.Wait() // each event's failure is in its place
	return ok(c, map[string]any{"results": results})
}

// pageSize reads a positive page size from the query parameter name: def when
// absent, clamped to most (a number too large to parse included); 0, negative
// or not a number is COMMON400.
func pageSize(c echo.Context, name string, def, most int) (int, error) {
	v := c.QueryParam(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if errors.Is(err, strconv.ErrRange) && v[0] != '-' {
		n, err = most, nil
	}
	if err != nil || n <= 0 {
		return 0, errBadRequest(name + " must be a positive integer")
	}
	return min(n, most), nil
}

func (s *Server) events(c echo.Context) error {
	room, err := roomParam(c)
	if err != nil {
		return err
	}
	since, err := hub.ParsePosition(c.QueryParam("since"))
	if err != nil {
		return errBadRequest("since is required: a stream id (ms-seq or ms) or 0 for the oldest")
	}
	count, err := pageSize(c, "count", 100, hub.MaxEventsPage)
	if err != nil {
		return err
	}
	page, err := s.hub.Events(c.Request().Context(), room, since, count)
	if err != nil {
		return err
	}
	return ok(c, page)
}
