package api

import (
	"github.com/labstack/echo/v4"

	"roomhub/hub"
)

// ticketBody is POST /stream-tickets' result.
type ticketBody struct {
	Ticket        string `json:"ticket"`
	ExpiresInSecs int    `json:"expiresInSecs"`
}

// streamTicket serves POST /stream-tickets: a ticket that opens one stream
// (?ticket=), once, within 30 s, as the caller, on any instance. A stream
// URL may end up in a proxy's access log; a ticket there is used or expired
// by the time anyone reads it, where a token would still be good.
func (s *Server) streamTicket(c echo.Context) error {
	t, err := s.hub.IssueTicket(c.Request().Context(), c.Get(tokenKey).(string))
	if err != nil {
		return err
	}
	return ok(c, ticketBody{Ticket: t, ExpiresInSecs: int(hub.StreamTicketTTL.Seconds())})
}
