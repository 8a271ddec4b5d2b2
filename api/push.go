package api

import (
	"errors"

	"github.com/labstack/echo/v4"

	"roomhub/hub/push"
	"roomhub/hub/push/webpush"
)

// UsePush serves Web Push's routes with svc (nil: the webpush channel is
// off, and they answer 404).
func (s *Server) UsePush(svc *webpush.Service) { s.push = svc }

// pushOn lets a push route through only while the webpush channel is on:
// else 404.
func (s *Server) pushOn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.push == nil {
			return errNotFound("web push is off: webpush is not in DELIVERY_CHANNELS")
		}
		return next(c)
	}
}

// vapidPublicKey serves GET /push/vapid-public-key.
func (s *Server) vapidPublicKey(c echo.Context) error {
	return ok(c, map[string]string{"publicKey": s.push.PublicKey()})
}

// subscribePush serves POST /push/subscriptions: a browser's
// PushSubscription.toJSON(), checked (the SSRF rule, the keys) and kept.
func (s *Server) subscribePush(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		webpush.Subscription
		Replaces string `json:"replaces"` // the endpoint a renewed subscription replaces
	}
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if err := s.push.Subscribe(c.Request().Context(), userOf(c).ID, req.Subscription, req.Replaces); err != nil {
		var bad *webpush.BadSubscription
		if errors.As(err, &bad) {
			return errBadRequest(bad.Reason)
		}
		return tokenBudget(c, err)
	}
	return ok(c, map[string]bool{"subscribed": true})
}

// unsubscribePush serves DELETE /push/subscriptions {"endpoint"}.
func (s *Server) unsubscribePush(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		Endpoint string `json:"endpoint"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if req.Endpoint == "" {
		return errBadRequest("endpoint is required")
	}
	gone, err := s.push.Unsubscribe(c.Request().Context(), userOf(c).ID, req.Endpoint)
	if err != nil {
		return err
	}
	return ok(c, map[string]bool{"unsubscribed": gone})
}

// tokenBudget answers a registration past the user's budget of new push
// tokens 429 COMMON429 with Retry-After; any other error as it is.
func tokenBudget(c echo.Context, err error) error {
	var tm *push.TooManyTokens
	if errors.As(err, &tm) {
		return tooMany(c, errTooMany{wait: tm.Wait})
	}
	return err
}
