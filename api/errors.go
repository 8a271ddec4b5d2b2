package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"roomhub/hub"
	"roomhub/hub/publish"
	"roomhub/hub/topics"
)

// Envelope is the shape of every JSON answer.
type Envelope struct {
	IsSuccess bool   `json:"isSuccess"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	Result    any    `json:"result"`
}

// Error is an answer with a status, a code of DESIGN.md's table and a message
// that is safe to show. Cause, if any, is logged and never sent.
type Error struct {
	Status  int
	Code    string
	Message string
	Cause   error
}

// Error is for logs: it includes the cause, which answers never show.
func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Code + ": " + e.Message + ": " + e.Cause.Error()
	}
	return e.Code + ": " + e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Errors the handlers return.
func errBadRequest(msg string) *Error { return &Error{http.StatusBadRequest, "COMMON400", msg, nil} }
func errNotFound(msg string) *Error   { return &Error{http.StatusNotFound, "COMMON404", msg, nil} }
func errForbidden(msg string) *Error  { return &Error{http.StatusForbidden, "COMMON403", msg, nil} }
func errUnauthorized(msg string) *Error {
	return &Error{http.StatusUnauthorized, "AUTH4001", msg, nil}
}

// ok writes a success envelope.
func ok(c echo.Context, result any) error {
	return c.JSON(http.StatusOK, Envelope{IsSuccess: true, Code: "COMMON200", Message: "OK", Result: result})
}

// refusalStatus is the HTTP status of each code a refusal may carry.
var refusalStatus = map[string]int{
	"COMMON400": http.StatusBadRequest, "NOTIF4001": http.StatusBadRequest,
	"NOTIF4091": http.StatusConflict, "COMMON413": http.StatusRequestEntityTooLarge,
}

// toError maps any error to an *Error: the one table of status and code.
func toError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return errNotFound("no such route")
		case http.StatusMethodNotAllowed:
			return &Error{http.StatusMethodNotAllowed, "COMMON400", "method not allowed on this route", nil}
		case http.StatusRequestEntityTooLarge:
			return &Error{http.StatusRequestEntityTooLarge, "COMMON413", "request body too large", nil}
		case http.StatusUnauthorized:
			return errUnauthorized("authentication required")
		case http.StatusForbidden:
			return &Error{http.StatusForbidden, "COMMON403", "forbidden", nil}
		case http.StatusServiceUnavailable:
			return &Error{http.StatusServiceUnavailable, "REDIS5001", "service unavailable", err}
		}
		if he.Code >= 400 && he.Code < 500 {
			return &Error{he.Code, "COMMON400", http.StatusText(he.Code), nil}
		}
		return &Error{http.StatusInternalServerError, "COMMON500", "internal server error", err}
	}
	if r, ok := publish.RefusalOf(err); ok { // a bad field, anywhere; a publish refused for what it says
		return &Error{refusalStatus[r.Code], r.Code, r.Message, nil}
	}
	var full *topics.FullError
	switch {
	case errors.As(err, &full):
		return &Error{http.StatusConflict, "COMMON409", full.Error(), nil}
	case errors.Is(err, hub.ErrNotFound):
		return errNotFound("not found")
	case errors.Is(err, hub.ErrForbidden):
		return &Error{http.StatusForbidden, "COMMON403", err.Error(), nil}
	case errors.Is(err, hub.ErrAccessUnavailable):
		return &Error{http.StatusServiceUnavailable, "AUTH5031", "room authorization backend unreachable", err}
	case errors.Is(err, hub.ErrNotReplicated):
		return &Error{http.StatusServiceUnavailable, "REDIS5001",
			"published, but not yet on PUBLISH_WAIT_REPLICAS replicas: retry with the same idempotencyKey", err}
	case errors.Is(err, hub.ErrRedisReply):
		return &Error{http.StatusInternalServerError, "REDIS5002", "unexpected answer from Redis", err}
	case errors.Is(err, hub.ErrRedis), errors.Is(err, context.DeadlineExceeded):
		return &Error{http.StatusServiceUnavailable, "REDIS5001", "Redis is unreachable", err}
	}
	return &Error{http.StatusInternalServerError, "COMMON500", "internal server error", err}
}

// errorHandler is Echo's HTTPErrorHandler: every error becomes the JSON envelope.
func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		e := toError(err)
		if e.Status >= 500 {
			log.ErrorContext(c.Request().Context(), "request failed", "method", c.Request().Method, "path", c.Request().URL.Path,
				"code", e.Code, "err", err)
		}
		if e.Status == http.StatusMethodNotAllowed {
			c.Response().Header().Set("Allow", allowedMethods(c))
		}
		env := Envelope{IsSuccess: false, Code: e.Code, Message: e.Message}
		var werr error
		if c.Request().Method == http.MethodHead {
			werr = c.NoContent(e.Status)
		} else {
			werr = c.JSON(e.Status, env)
		}
		if werr != nil {
			log.Debug("writing error answer", "err", werr)
		}
	}
}

func allowedMethods(c echo.Context) string {
	if v, ok := c.Get(echo.ContextKeyHeaderAllow).(string); ok {
		return v
	}
	return ""
}
