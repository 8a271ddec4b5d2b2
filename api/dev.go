package api

import (
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"roomhub/hub"
)

// devTokenTTL is how long a dev token lives.
const devTokenTTL = 12 * time.Hour

// devToken mints an access token for ?userId= (dev mode only).
func (s *Server) devToken(c echo.Context) error {
	id, err := strconv.ParseInt(c.QueryParam("userId"), 10, 64)
	if err != nil || id <= 0 {
		return errBadRequest("userId must be a positive integer")
	}
	var rooms []any // ?rooms=42,43 or ?rooms=* adds a rooms claim (ROOM_AUTH=claim)
	if v := c.QueryParam("rooms"); v == "*" {
		rooms = append(rooms, "*")
	} else if v != "" {
		var ids []int64
		for _, f := range strings.Split(v, ",") {
			r, err := hub.ParseRoomID(f)
			if err != nil {
				return errBadRequest("rooms must be * or a comma list of room ids")
			}
			ids = append(ids, r)
		}
		rooms = append(rooms, ids)
	}
	ttl := devTokenTTL
	if v := c.QueryParam("ttlSecs"); v != "" { // short-lived tokens, to watch clients renew them
		secs, err := strconv.Atoi(v)
		if err != nil || secs < 1 || secs > int(devTokenTTL/time.Second) {
			return errBadRequest("ttlSecs must be between 1 and 43200")
		}
		ttl = time.Duration(secs) * time.Second
	}
	tok, err := s.tokens.Sign(id, ttl, rooms...)
	if err != nil {
		return err
	}
	return ok(c, map[string]any{"token": tok, "userId": id, "expiresInSecs": int(ttl / time.Second)})
}

// devPublish is publish without the internal key (dev mode only), for the demo page.
func (s *Server) devPublish(c echo.Context) error { return s.publishOne(c) }
