package api

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"roomhub/hub"
)

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestToError_Table(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("x: %w", hub.ErrBadEventType), 400, "NOTIF4001"},
		{hub.ErrIdempotencyReuse, 409, "NOTIF4091"},
		{fmt.Errorf("%w: bad", hub.ErrInvalid), 400, "COMMON400"},
		{hub.ErrNotFound, 404, "COMMON404"},
		{fmt.Errorf("%w: dial", hub.ErrRedis), 503, "REDIS5001"},
		{fmt.Errorf("%w: WRONGTYPE", hub.ErrRedisReply), 500, "REDIS5002"},
		{echo.ErrNotFound, 404, "COMMON404"},
		{echo.ErrMethodNotAllowed, 405, "COMMON400"},
		{echo.ErrStatusRequestEntityTooLarge, 413, "COMMON413"},
		{errors.New("boom"), 500, "COMMON500"},
		{errUnauthorized("no"), 401, "AUTH4001"},
	} {
		got := toError(tc.err)
		if got.Status != tc.status || got.Code != tc.code {
			t.Errorf("toError(%v) = %d %s, want %d %s", tc.err, got.Status, got.Code, tc.status, tc.code)
		}
		if got.Status >= 500 && strings.Contains(got.Message, "dial") {
			t.Errorf("internal detail leaked: %q", got.Message)
		}
	}
	if http.StatusText(toError(errors.New("x")).Status) == "" {
		t.Fatal("unknown status")
	}
}
