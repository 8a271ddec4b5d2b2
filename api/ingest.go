package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"roomhub/hub/ingest"
)

// UseIngest consumes the ingest streams through this server's publish path
// (an entry is a publish body, answered as the HTTP route would answer it),
// lists their dead entries at GET /internal/ingest/dead and reports their
// lag in /health. It starts the consumer.
func (s *Server) UseIngest(in *ingest.Ingest) {
	s.ingest = in
	in.Start(s.publishEntries, s.cfg.PublishMaxBytes+publishBodyHeadway)
}

// publishEntries is ingest's PublishFunc: each entry's event field goes
// where a POST /notifications/publish body goes, in order per room; an
// entry the route would refuse (4xx) is dead with that code and message, one
// it would answer 5xx is retried.
func (s *Server) publishEntries(ctx context.Context, entries []ingest.Entry) []ingest.Outcome {
	out := make([]ingest.Outcome, len(entries))
	bodies := make([]publishBody, 0, len(entries))
	at := make([]int, 0, len(entries))
	limit := s.cfg.PublishMaxBytes + publishBodyHeadway
	for i, e := range entries {
		switch {
		case e.Missing:
			out[i] = ingest.Outcome{Result: ingest.Dead, Code: "COMMON400", Message: "the entry has no event field"}
		case e.TooLarge > 0:
			out[i] = ingest.Outcome{Result: ingest.Dead, Code: "COMMON413",
				Message: "the entry's " + strconv.FormatInt(e.TooLarge, 10) + " bytes are over the " + strconv.FormatInt(limit, 10) + " an event may hold; its text is not kept"}
		case int64(len(e.Body)) > limit:
			out[i] = ingest.Outcome{Result: ingest.Dead, Code: "COMMON413",
				Message: "event is larger than " + strconv.FormatInt(limit, 10) + " bytes"}
		default:
			bodies, at = append(bodies, publishBody{raw: e.Body, defaultKey: e.Key, span: e.Span}), append(at, i)
		}
	}
	answers := s.publishBodies(ctx, bodies, true)
	s.logFailures(ctx, "ingest", answers)
	for j, a := range answers {
		o := &out[at[j]]
		switch {
		case a.IsSuccess && a.Result.Duplicate:
			o.Result = ingest.Duplicate
		case a.IsSuccess:
			o.Result = ingest.Published
		case a.err.Status >= http.StatusInternalServerError:
			o.Result = ingest.Retry
		default:
			*o = ingest.Outcome{Result: ingest.Dead, Code: a.Code, Message: a.Message}
		}
	}
	return out
}

// ingestDead serves GET /internal/ingest/dead?partition=&limit=&after=.
func (s *Server) ingestDead(c echo.Context) error {
	limit, err := pageSize(c, "limit", 100, 1000)
	if err != nil {
		return err
	}
	partition := -1
	if v := c.QueryParam("partition"); v != "" {
		if partition, err = strconv.Atoi(v); err != nil || partition < 0 {
			return errBadRequest("partition must be 0 to INGEST_PARTITIONS-1")
		}
	}
	var after *ingest.DeadCursor
	if v := c.QueryParam("after"); v != "" {
		cur, err := ingest.ParseDeadCursor(v)
		if err != nil {
			return err
		}
		after = &cur
	}
	type page struct {
		Entries   []ingest.DeadEntry `json:"entries"`
		NextAfter *string            `json:"nextAfter"`
	}
	if s.ingest == nil {
		return ok(c, page{Entries: []ingest.DeadEntry{}})
	}
	entries, next, err := s.ingest.Dead(c.Request().Context(), partition, after, limit)
	if err != nil {
		return err
	}
	p := page{Entries: entries}
	if next != nil {
		n := next.String()
		p.NextAfter = &n
	}
	return ok(c, p)
}
