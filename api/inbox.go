package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"

	"github.com/labstack/echo/v4"

	"roomhub/hub"
	"roomhub/hub/inbox"
)

func (s *Server) unread(c echo.Context) error {
	n, err := s.inbox.Unread(c.Request().Context(), userOf(c).ID)
	if err != nil {
		return err
	}
	return ok(c, map[string]int64{"count": n})
}

func (s *Server) listInbox(c echo.Context) error {
	limit, err := pageSize(c, "limit", 20, inbox.MaxInboxPage)
	if err != nil {
		return err
	}
	page, err := s.inbox.List(c.Request().Context(), userOf(c).ID, limit, c.QueryParam("before"))
	if err != nil {
		return err
	}
	return ok(c, page)
}

func (s *Server) markRead(c echo.Context) error {
	// Echo hands path parameters over as sent: a client that escapes the
	// id's colon (encodeURIComponent does) sends 42%3A….
	id, err := url.PathUnescape(c.Param("notificationId"))
	if err != nil {
		return errBadRequest("notificationId is not a valid path segment")
	}
	res, err := s.inbox.MarkRead(c.Request().Context(), userOf(c).ID, id)
	if errors.Is(err, hub.ErrNotFound) {
		return errNotFound("no such notification in your inbox")
	}
	if err != nil {
		return err
	}
	return ok(c, res)
}

func (s *Server) markAllRead(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		UpTo *string `json:"upTo"`
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeStrict(body, &req); err != nil {
			return err
		}
	}
	upTo := ""
	if req.UpTo != nil {
		upTo = *req.UpTo
		if upTo == "" {
			return errBadRequest("upTo must be a notificationId")
		}
	}
	res, err := s.inbox.MarkAllRead(c.Request().Context(), userOf(c).ID, upTo)
	if err != nil {
		return err
	}
	return ok(c, res)
}

func (s *Server) settings(c echo.Context) error {
	st, err := s.inbox.Settings(c.Request().Context(), userOf(c).ID)
	if err != nil {
		return err
	}
	return ok(c, st)
}

func (s *Server) putSettings(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		MutedEventTypes *[]string `json:"mutedEventTypes"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if req.MutedEventTypes == nil {
		return errBadRequest("mutedEventTypes is required: a list of event types")
	}
	st, err := s.inbox.SetSettings(c.Request().Context(), userOf(c).ID, inbox.Settings{MutedEventTypes: *req.MutedEventTypes})
	if err != nil {
		return err
	}
	return ok(c, st)
}

// decodeStrict reads one JSON object into v; anything else is COMMON400.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return errBadRequest(fieldName(te.Field) + " has the wrong type")
		}
		return errBadRequest("body is not a valid JSON object")
	}
	if dec.More() {
		return errBadRequest("body must hold one JSON object")
	}
	return nil
}
