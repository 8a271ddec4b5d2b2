package api

import "github.com/labstack/echo/v4"

// Routes are the server's routes, for the tests that check each is
// documented (openapi_test.go, tickets_test.go).
func (s *Server) Routes() []*echo.Route { return s.e.Routes() }
