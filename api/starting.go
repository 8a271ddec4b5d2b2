package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"roomhub/internal/version"
)

// Starting is the handler of an instance whose Redis has not answered yet:
// /health is 503 degraded (so no load balancer sends it streams) and every
// other route 503 REDIS5001. main swaps in the real handler once Redis answers.
func Starting(started time.Time) http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Any("/*", func(c echo.Context) error {
		if c.Request().URL.Path == "/health" {
			return c.JSON(http.StatusServiceUnavailable, Envelope{Code: "REDIS5001",
				Message: "degraded: waiting for Redis", Result: map[string]any{
					"status": "degraded", "redisConnected": false, "activeConnections": 0,
					"activeRooms": 0, "uptimeSecs": int64(time.Since(started) / time.Second), "version": version.Version}})
		}
		return c.JSON(http.StatusServiceUnavailable, Envelope{Code: "REDIS5001", Message: "Redis is unreachable"})
	})
	return e
}
