package api

import "github.com/labstack/echo/v4"

func (s *Server) presence(c echo.Context) error {
	room, err := roomParam(c)
	if err != nil {
		return err
	}
	list, err := s.hub.Presence(c.Request().Context(), room)
	if err != nil {
		return err
	}
	return ok(c, list)
}

func (s *Server) heartbeat(c echo.Context) error {
	room, err := roomParam(c)
	if err != nil {
		return err
	}
	ack, err := s.hub.Heartbeat(c.Request().Context(), room, userOf(c).ID)
	if err != nil {
		return err
	}
	return ok(c, ack)
}
