package api

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

func TestRecover_PanicIsCOMMON500AndLogged(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	e := echo.New()
	e.HTTPErrorHandler = errorHandler(log)
	e.Use(recoverJSON(log))
	e.GET("/boom", func(echo.Context) error { panic("secret detail") })
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/boom", nil))
	body := rec.Body.String()
	if rec.Code != 500 || !strings.Contains(body, `"code":"COMMON500"`) || strings.Contains(body, "secret") {
		t.Fatalf("panic answered %d %s", rec.Code, body)
	}
	if !strings.Contains(logs.String(), "secret detail") {
		t.Fatalf("panic not logged: %s", logs.String())
	}
}
