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
	"go.opentelemetry.io/otel/trace"

	"roomhub/hub"
	"roomhub/hub/delivery"
	"roomhub/hub/inbox"
)

// publishFields is the publish request as sent; pointers tell missing from zero.
type publishFields struct {
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
	var b publishFields
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
	answers := s.publishBodies(c.Request().Context(), []publishBody{{raw: body}}, false)
	if a := answers[0]; !a.IsSuccess {
		return a.err
	}
	return ok(c, answers[0].Result)
}

// MaxBatch bounds the events of one batch publish.
const MaxBatch = 500

// batchResult is one event's answer in a batch: exactly what that publish
// alone would have answered.
type batchResult struct {
	IsSuccess bool               `json:"isSuccess"`
	Result    *hub.PublishResult `json:"result,omitempty"`
	Code      string             `json:"code,omitempty"`
	Message   string             `json:"message,omitempty"`
	err       *Error             // the failure, when not IsSuccess
}

// publishBody is one publish body as received, with the idempotency key it
// gets when it names none ("": none) and the span it belongs to (an ingest
// entry's; nil: the context's).
type publishBody struct {
	raw        []byte
	defaultKey string
	span       trace.Span
}

// publishBodies is the one path of every publish (POST /notifications/publish,
// its batch, an ingest read): each body decoded and checked as it would be
// alone, then all published together (inbox.PublishAll), each answered in
// its place. inOrder: see inbox.PublishAll.
func (s *Server) publishBodies(ctx context.Context, bodies []publishBody, inOrder bool) []batchResult {
	answers := make([]batchResult, len(bodies))
	reqs := make([]inbox.PublishRequest, 0, len(bodies))
	at := make([]int, 0, len(bodies))
	for i, b := range bodies {
		r, err := s.decodeSized(b.raw)
		if err != nil {
			answers[i] = failed(err)
			continue
		}
		if r.IdempotencyKey == "" {
			r.IdempotencyKey = b.defaultKey
		}
		r.Span = b.span
		reqs, at = append(reqs, r), append(at, i)
	}
	results, errs := s.inbox.PublishAll(ctx, reqs, inOrder)
	for j, i := range at {
		if errs[j] != nil {
			answers[i] = failed(errs[j])
			continue
		}
		answers[i] = batchResult{IsSuccess: true, Result: &results[j]}
	}
	return answers
}

// failed is the answer to a body that failed with err.
func failed(err error) batchResult {
	e := toError(err)
	return batchResult{Code: e.Code, Message: e.Message, err: e}
}

// logFailures logs the answers that failed for want of Redis (what=where
// the bodies came from); a refused body is the sender's to see.
func (s *Server) logFailures(ctx context.Context, what string, answers []batchResult) {
	for i, a := range answers {
		if a.err != nil && a.err.Status >= 500 {
			s.log.ErrorContext(ctx, what+" event failed", "index", i, "code", a.Code, "err", a.err.Cause)
		}
	}
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

// publishBatch serves POST /notifications/publish/batch {"events":[…]}:
// each event is answered as POST /notifications/publish would answer it
// alone (one failing stops none of the others); events to one room go out
// in their order in the batch.
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
	bodies := make([]publishBody, len(req.Events))
	for i, raw := range req.Events {
		bodies[i] = publishBody{raw: raw}
	}
	answers := s.publishBodies(c.Request().Context(), bodies, false)
	s.logFailures(c.Request().Context(), "batch publish", answers)
	return ok(c, map[string]any{"results": answers})
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
