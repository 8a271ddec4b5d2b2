package api

import (
	"strconv"

	"github.com/labstack/echo/v4"

	"roomhub/hub/ingest"
)

// UseIngest lists the ingest streams' dead entries at GET
// /internal/ingest/dead and reports their lag in /health (in is started
// apart, with the publish pipeline this server uses).
func (s *Server) UseIngest(in *ingest.Ingest) {
	s.ingest = in
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
