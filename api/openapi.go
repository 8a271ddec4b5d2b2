package api

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openAPI describes every route: api/openapi.yaml, served at /openapi.yaml.
//
//go:embed openapi.yaml
var openAPI []byte

func (s *Server) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", openAPI)
}
