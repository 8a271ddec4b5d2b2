package api

import (
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// devTokenTTL is how long a dev token lives.
const devTokenTTL = 12 * time.Hour

// devToken mints an access token for ?userId= (dev mode only).
func (s *Server) devToken(c echo.Context) error {
	id, err := strconv.ParseInt(c.QueryParam("userId"), 10, 64)
	if err != nil || id <= 0 {
		return errBadRequest("userId must be a positive integer")
	}
	tok, err := s.tokens.Sign(id, devTokenTTL)
	if err != nil {
		return err
	}
	return ok(c, map[string]any{"token": tok, "userId": id, "expiresInSecs": int(devTokenTTL / time.Second)})
}

// devPublish is publish without the internal key (dev mode only), for the demo page.
func (s *Server) devPublish(c echo.Context) error { return s.publish(c) }
