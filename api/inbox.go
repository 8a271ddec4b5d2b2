package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"roomhub/hub"
	"roomhub/hub/delivery"
	"roomhub/hub/inbox"
	"roomhub/internal/strictjson"
)

func (s *Server) unread(c echo.Context) error {
	n, err := s.inbox.Unread(c.Request().Context(), userOf(c).ID)
	if err != nil {
		return err
	}
	return ok(c, map[string]int64{"count": n})
}

func (s *Server) counts(c echo.Context) error {
	counts, err := s.inbox.Counts(c.Request().Context(), userOf(c).ID)
	if err != nil {
		return err
	}
	return ok(c, counts)
}

func (s *Server) listInbox(c echo.Context) error {
	limit, err := pageSize(c, "limit", 20, inbox.MaxInboxPage)
	if err != nil {
		return err
	}
	f, err := queryFilter(c)
	if err != nil {
		return err
	}
	page, err := s.inbox.List(c.Request().Context(), userOf(c).ID, f, limit, c.QueryParam("before"))
	if err != nil {
		return err
	}
	return ok(c, page)
}

// queryFilter reads the list's filter from the query: state, tags and
// severity (comma lists), eventType, roomId.
func queryFilter(c echo.Context) (inbox.Filter, error) {
	q := c.QueryParams()
	list := func(name string) ([]string, error) {
		vs, set := q[name]
		if !set {
			return nil, nil
		}
		if len(vs) != 1 || vs[0] == "" {
			return nil, errBadRequest(name + " is a comma list, given once")
		}
		return strings.Split(vs[0], ","), nil
	}
	f := inbox.Filter{State: c.QueryParam("state"), EventType: c.QueryParam("eventType")}
	if _, set := q["state"]; set && f.State == "" {
		return f, errBadRequest("state must not be empty")
	}
	var err error
	if f.Tags, err = list("tags"); err != nil {
		return f, err
	}
	if f.Severities, err = list("severity"); err != nil {
		return f, err
	}
	if r, set := q["roomId"]; set {
		if f.RoomID, err = hub.ParseRoomID(r[0]); err != nil || len(r) != 1 {
			return f, errBadRequest("roomId must be a positive 64-bit integer")
		}
	}
	if err := f.Check(); err != nil {
		return f, err
	}
	return f, nil
}

// notificationID reads the path's notificationId. Echo hands path
// parameters over as sent: a client that escapes the id's colon
// (encodeURIComponent does) sends 42%3A….
func notificationID(c echo.Context) (string, error) {
	id, err := url.PathUnescape(c.Param("notificationId"))
	if err != nil {
		return "", errBadRequest("notificationId is not a valid path segment")
	}
	return id, nil
}

func notInInbox(err error) error {
	if errors.Is(err, hub.ErrNotFound) {
		return errNotFound("no such notification in your inbox")
	}
	return err
}

func (s *Server) markRead(c echo.Context) error {
	id, err := notificationID(c)
	if err != nil {
		return err
	}
	res, err := s.inbox.MarkRead(c.Request().Context(), userOf(c).ID, id)
	if err != nil {
		return notInInbox(err)
	}
	return ok(c, res)
}

// act serves PATCH /notifications/:notificationId/{seen,archive,unarchive,
// snooze,unsnooze}: {"notification": item} as it is after the action.
func (s *Server) act(action string) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := notificationID(c)
		if err != nil {
			return err
		}
		var until time.Time
		if action == inbox.ActionSnooze {
			body, err := readBody(c)
			if err != nil {
				return err
			}
			var req struct {
				Until *string `json:"until"`
			}
			if err := decodeStrict(body, &req); err != nil {
				return err
			}
			if req.Until == nil {
				return errBadRequest("until is required: an RFC 3339 time 1 minute to 90 days ahead")
			}
			if until, err = time.Parse(time.RFC3339, *req.Until); err != nil {
				return errBadRequest("until must be an RFC 3339 time")
			}
		}
		n, err := s.inbox.Act(c.Request().Context(), userOf(c).ID, action, id, until)
		if err != nil {
			return notInInbox(err)
		}
		return ok(c, map[string]inbox.Notification{"notification": n})
	}
}

func (s *Server) deleteNotification(c echo.Context) error {
	id, err := notificationID(c)
	if err != nil {
		return err
	}
	id, err = s.inbox.Delete(c.Request().Context(), userOf(c).ID, id)
	if err != nil {
		return notInInbox(err)
	}
	return ok(c, map[string]any{"notificationId": id, "deleted": true})
}

func (s *Server) bulk(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		Action          *string       `json:"action"`
		NotificationIDs []string      `json:"notificationIds"`
		Filter          *inbox.Filter `json:"filter"`
		UpTo            *string       `json:"upTo"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if req.Action == nil {
		return errBadRequest("action is required: one of " + strings.Join(inbox.BulkActions, ", "))
	}
	upTo, err := optionalUpTo(req.UpTo)
	if err != nil {
		return err
	}
	r := inbox.BulkRequest{Action: *req.Action, IDs: req.NotificationIDs, Filter: req.Filter, UpTo: upTo}
	res, err := s.inbox.Bulk(c.Request().Context(), userOf(c).ID, r)
	if err != nil {
		return err
	}
	s.chargeItems(userOf(c).ID, res.Looked)
	return ok(c, res)
}

func (s *Server) markAllRead(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		UpTo *string `json:"upTo"`
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeStrict(body, &req); err != nil {
			return err
		}
	}
	upTo, err := optionalUpTo(req.UpTo)
	if err != nil {
		return err
	}
	res, err := s.inbox.MarkAllRead(c.Request().Context(), userOf(c).ID, upTo)
	if err != nil {
		return err
	}
	s.chargeItems(userOf(c).ID, res.Looked)
	return ok(c, res)
}

// optionalUpTo reads a body's upTo: absent is "", present it must name an
// item (the inbox checks its form).
func optionalUpTo(upTo *string) (string, error) {
	if upTo == nil {
		return "", nil
	}
	if *upTo == "" {
		return "", errBadRequest("upTo must be a notificationId")
	}
	return *upTo, nil
}

// settingsBody is GET and PUT /notifications/settings: the inbox's muted
// types and the delivery preferences.
type settingsBody struct {
	MutedEventTypes []string                         `json:"mutedEventTypes"`
	Channels        map[string]delivery.ChannelPrefs `json:"channels"`
	QuietHours      *delivery.QuietHours             `json:"quietHours"`
}

func (s *Server) settings(c echo.Context) error {
	ctx, u := c.Request().Context(), userOf(c).ID
	st, err := s.inbox.Settings(ctx, u)
	if err != nil {
		return err
	}
	out := settingsBody{MutedEventTypes: st.MutedEventTypes, Channels: map[string]delivery.ChannelPrefs{}}
	if d := s.inbox.Delivery(); d != nil {
		p, err := d.Prefs(ctx, u)
		if err != nil {
			return err
		}
		out.Channels, out.QuietHours = p.Channels, p.QuietHours
	}
	return ok(c, out)
}

func (s *Server) putSettings(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		MutedEventTypes *[]string                         `json:"mutedEventTypes"`
		Channels        map[string]delivery.ChannelUpdate `json:"channels"`
		QuietHours      json.RawMessage                   `json:"quietHours"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if req.MutedEventTypes == nil {
		return errBadRequest("mutedEventTypes is required: a list of event types")
	}
	up := delivery.PrefsUpdate{Channels: req.Channels, MaxMutedPerOne: inbox.MaxMutedTypes}
	if len(req.QuietHours) > 0 {
		up.QuietHoursSet = true
		if string(req.QuietHours) != "null" {
			var q delivery.QuietHours
			if err := decodeStrict(req.QuietHours, &q); err != nil {
				return errBadRequest(`quietHours is {"start":"HH:MM","end":"HH:MM","timeZone":"<IANA zone>"} or null`)
			}
			up.QuietHours = &q
		}
	}
	d := s.inbox.Delivery()
	if d == nil && (len(up.Channels) > 0 || up.QuietHours != nil) {
		return errBadRequest("no delivery channels are configured (DELIVERY_CHANNELS)")
	}
	ctx, u := c.Request().Context(), userOf(c).ID
	// The delivery part first: it is the one that may refuse a value.
	var p delivery.Prefs
	if d != nil {
		if err := d.CheckPrefs(up); err != nil {
			return err
		}
	}
	st, err := s.inbox.SetSettings(ctx, u, inbox.Settings{MutedEventTypes: *req.MutedEventTypes})
	if err != nil {
		return err
	}
	out := settingsBody{MutedEventTypes: st.MutedEventTypes, Channels: map[string]delivery.ChannelPrefs{}}
	if d != nil {
		if p, err = d.SetPrefs(ctx, u, up); err != nil {
			return err
		}
		out.Channels, out.QuietHours = p.Channels, p.QuietHours
	}
	return ok(c, out)
}

// decodeStrict reads one JSON object into v; anything else is COMMON400.
func decodeStrict(body []byte, v any) error {
	if err := strictjson.Decode(body, v); err != nil {
		return errBadRequest(strictjson.Problem(err))
	}
	return nil
}
