package api

import (
	"errors"
	"strconv"

	"github.com/labstack/echo/v4"

	"roomhub/hub"
	"roomhub/hub/delivery"
	"roomhub/hub/inbox"
	"roomhub/hub/topics"
)

// notificationDeliveries serves GET
// /internal/notifications/:notificationId/deliveries: its deliveries, and
// its room event (while the room's history holds it) and fan-out (when it
// went to a topic's followers), else null.
func (s *Server) notificationDeliveries(c echo.Context) error {
	raw, err := notificationID(c)
	if err != nil {
		return err
	}
	room, id, canonical, err := inbox.ParseNotificationID(raw)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	out := []delivery.Record{}
	if d := s.inbox.Delivery(); d != nil {
		if out, err = d.OfNotification(ctx, room, id.String(), canonical); err != nil {
			return err
		}
	}
	var event *hub.EventView
	if ev, err := s.hub.EventAt(ctx, room, id); err == nil {
		v := ev.View()
		event = &v
	} else if !errors.Is(err, hub.ErrNotFound) {
		return err
	}
	var fanout *topics.Fanout
	if s.topics != nil {
		if f, err := s.topics.Fanout(ctx, canonical); err == nil {
			fanout = &f
		} else if !errors.Is(err, hub.ErrNotFound) && !errors.Is(err, hub.ErrInvalid) {
			return err
		}
	}
	return ok(c, map[string]any{"deliveries": out, "event": event, "fanout": fanout})
}

// deadDeliveries serves GET /internal/deliveries/dead?channel=&limit=&after=.
func (s *Server) deadDeliveries(c echo.Context) error {
	limit, err := pageSize(c, "limit", 100, 1000)
	if err != nil {
		return err
	}
	ch := c.QueryParam("channel")
	d := s.inbox.Delivery()
	if d == nil {
		return ok(c, delivery.DeadPage{Deliveries: []delivery.Record{}})
	}
	if ch != "" && !d.On(ch) {
		return errBadRequest("channel " + strconv.Quote(ch) + " is not one of DELIVERY_CHANNELS")
	}
	page, err := d.Dead(c.Request().Context(), ch, limit, c.QueryParam("after"))
	if err != nil {
		return err
	}
	return ok(c, page)
}

// redrive serves POST /internal/deliveries/redrive {"channel"?,"userId"?,
// "notificationIds"?} (at least one) or {"all":true}.
func (s *Server) redrive(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		Channel         *string  `json:"channel"`
		UserID          *int64   `json:"userId"`
		NotificationIDs []string `json:"notificationIds"`
		All             *bool    `json:"all"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	// "Everything" must be said: a body that names nothing (or only a typo,
	// refused above) re-sends no one's dead deliveries.
	filtered := req.Channel != nil || req.UserID != nil || req.NotificationIDs != nil
	switch {
	case req.All != nil && (!*req.All || filtered):
		return errBadRequest(`all is true alone, or absent beside channel, userId or notificationIds`)
	case req.All == nil && !filtered:
		return errBadRequest(`name what to re-drive: channel, userId, notificationIds, or {"all":true}`)
	}
	d := s.inbox.Delivery()
	var f delivery.DeadFilter
	if req.Channel != nil {
		if !d.On(*req.Channel) {
			return errBadRequest("channel " + strconv.Quote(*req.Channel) + " is not one of DELIVERY_CHANNELS")
		}
		f.Channel = *req.Channel
	}
	if req.UserID != nil {
		if *req.UserID <= 0 {
			return errBadRequest("userId must be a positive integer")
		}
		f.UserID = *req.UserID
	}
	if req.NotificationIDs != nil {
		if len(req.NotificationIDs) == 0 || len(req.NotificationIDs) > delivery.MaxRedrive {
			return errBadRequest("notificationIds lists 1 to 10000 notificationIds")
		}
		f.NotificationIDs = map[string]bool{}
		for _, id := range req.NotificationIDs {
			_, _, canonical, err := inbox.ParseNotificationID(id)
			if err != nil {
				return err
			}
			f.NotificationIDs[canonical] = true
		}
	}
	if d == nil {
		return ok(c, map[string]any{"requeued": 0, "more": false})
	}
	n, more, err := d.Redrive(c.Request().Context(), f)
	if err != nil {
		return err
	}
	return ok(c, map[string]any{"requeued": n, "more": more})
}
