package api

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"roomhub/hub/push"
)

// UseDevices serves the device routes with d (nil: no channel the hub
// sends itself is on, and they answer 404).
func (s *Server) UseDevices(d *push.Devices) { s.devices = d }

// devicesOn lets a device route through only while a push channel is on.
func (s *Server) devicesOn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.devices == nil {
			return errNotFound("push is off: none of webpush, fcm and apns is in DELIVERY_CHANNELS")
		}
		return next(c)
	}
}

// registerDevice serves POST /push/devices: a phone's token, kept (or
// refreshed, or moved from another user), the one it replaces dropped.
func (s *Server) registerDevice(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var r push.Registration
	if err := decodeStrict(body, &r); err != nil {
		return err
	}
	if err := r.Check(); err != nil {
		return errBadRequest(err.Error())
	}
	if err := s.devices.Register(c.Request().Context(), userOf(c).ID, r, time.Now()); err != nil {
		return tokenBudget(c, err)
	}
	return ok(c, map[string]bool{"registered": true})
}

// unregisterDevice serves DELETE /push/devices {"platform","token"}: false
// when the user had no such device (another user's token included).
func (s *Server) unregisterDevice(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		Platform string `json:"platform"`
		Token    string `json:"token"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if err := push.CheckToken(req.Platform, req.Token); err != nil {
		return errBadRequest(err.Error())
	}
	gone, err := s.devices.Remove(c.Request().Context(), userOf(c).ID, req.Platform, req.Token)
	if err != nil {
		return err
	}
	return ok(c, map[string]bool{"unregistered": gone})
}

// listDevices serves GET /push/devices: the user's phones and browsers,
// first added first.
func (s *Server) listDevices(c echo.Context) error {
	all, err := s.devicesOf(c.Request().Context(), userOf(c).ID)
	if err != nil {
		return err
	}
	return ok(c, map[string][]push.Device{"devices": all})
}

// devicesOf is user's phones and, with web push on, browsers.
func (s *Server) devicesOf(ctx context.Context, user int64) ([]push.Device, error) {
	all, err := s.devices.List(ctx, user)
	if err != nil || s.push == nil {
		return all, err
	}
	browsers, err := s.push.Devices(ctx, user)
	if err != nil {
		return nil, err
	}
	all = append(all, browsers...)
	slices.SortFunc(all, func(a, b push.Device) int { return cmp.Or(a.AddedAt.Compare(b.AddedAt), strings.Compare(a.ID, b.ID)) })
	return all, nil
}

// setDeviceEnabled serves PATCH /push/devices/{id} {"enabled"}: consent on
// one of the user's phones or browsers, answered with the device as listed.
func (s *Server) setDeviceEnabled(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		Enabled *bool `json:"enabled"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if req.Enabled == nil {
		return errBadRequest("enabled (true or false) is required")
	}
	ctx, user, id := c.Request().Context(), userOf(c).ID, c.Param("id")
	found, err := s.devices.SetEnabled(ctx, user, id, *req.Enabled)
	if err == nil && !found && s.push != nil {
		found, err = s.push.SetEnabled(ctx, user, id, *req.Enabled)
	}
	if err != nil {
		return err
	}
	all, err := s.devicesOf(ctx, user)
	if err != nil {
		return err
	}
	if i := slices.IndexFunc(all, func(d push.Device) bool { return d.ID == id }); found && i >= 0 {
		return ok(c, all[i])
	}
	return errNotFound("no such device of yours")
}
