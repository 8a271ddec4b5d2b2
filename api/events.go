package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/labstack/echo/v4"

	"roomhub/hub"
	"roomhub/hub/publish"
)

// publishOne serves POST /notifications/publish: one body through the
// publish path.
func (s *Server) publishOne(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	o := s.pipeline.Run(c.Request().Context(), []publish.Body{{Raw: body}}, false)[0]
	if o.Err != nil {
		return o.Err
	}
	return ok(c, o.Result)
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
}

// answerOf is a publish's outcome as the batch route answers it.
func answerOf(o publish.Outcome) batchResult {
	if o.Err != nil {
		e := toError(o.Err)
		return batchResult{Code: e.Code, Message: e.Message}
	}
	return batchResult{IsSuccess: true, Result: &o.Result}
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
	bodies := make([]publish.Body, len(req.Events))
	for i, raw := range req.Events {
		bodies[i] = publish.Body{Raw: raw}
	}
	ctx := c.Request().Context()
	outcomes := s.pipeline.Run(ctx, bodies, false)
	answers := make([]batchResult, len(outcomes))
	for i, o := range outcomes {
		answers[i] = answerOf(o)
		if o.Failed() {
			s.log.ErrorContext(ctx, "batch publish event failed", "index", i, "code", answers[i].Code, "err", o.Err)
		}
	}
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
