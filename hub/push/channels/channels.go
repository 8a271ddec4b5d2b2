// Package channels builds the channels the hub sends itself (webpush, fcm,
// apns) from the configuration, with the devices they share: what main
// wires into delivery and the api, in one place.
package channels

import (
	"context"
	"crypto/tls"
	"log/slog"

	"roomhub/hub"
	"roomhub/hub/delivery"
	"roomhub/hub/push"
	"roomhub/hub/push/apns"
	"roomhub/hub/push/fcm"
	"roomhub/hub/push/webpush"
)

// Channels are the channels of the configuration that are on.
type Channels struct {
	// WebPush is the webpush channel (nil: off).
	WebPush *webpush.Service
	// Devices are the users' phones and the device routes' store (nil: no
	// channel the hub sends itself is on).
	Devices *push.Devices
	// Senders are the channels on, by name, as delivery sends through them.
	Senders map[string]delivery.Sender

	closers []func()
}

// New builds the channels of core's configuration; call it before
// core.Start. badge is the people's unread counts (the inbox) that phones
// show. A bad key is a *hub.ConfigError naming its variable. tlsConf (nil:
// the system's roots) is for tests that stand up the services.
func New(ctx context.Context, core *hub.Hub, log *slog.Logger, badge push.Badge, tlsConf *tls.Config) (*Channels, error) {
	cfg := core.Config()
	c := &Channels{Senders: map[string]delivery.Sender{}}
	if cfg.WebPush() || cfg.Devices() {
		c.Devices = push.NewDevices(core)
	}
	if cfg.WebPush() {
		wp, err := webpush.New(ctx, core, log, tlsConf)
		if err != nil {
			return nil, err
		}
		c.WebPush, c.Senders[hub.WebPushChannel] = wp, wp
		c.closers = append(c.closers, wp.Close)
	}
	if cfg.FCM() {
		f, err := fcm.New(core, log, c.Devices, badge, tlsConf)
		if err != nil {
			return nil, err
		}
		c.Senders[hub.FCMChannel] = f
		c.closers = append(c.closers, f.Close)
	}
	if cfg.APNS() {
		a, err := apns.New(core, log, c.Devices, badge, tlsConf)
		if err != nil {
			return nil, err
		}
		c.Senders[hub.APNSChannel] = a
		c.closers = append(c.closers, a.Close)
	}
	return c, nil
}

// Close lets the channels' idle connections go.
func (c *Channels) Close() {
	for _, f := range c.closers {
		f()
	}
}

// CheckConfig reads every channel's keys, as New would, before anything
// waits for Redis: a bad one is a *hub.ConfigError naming its variable.
func CheckConfig(cfg hub.Config) error {
	for _, check := range []func(hub.Config) error{webpush.CheckConfig, fcm.CheckConfig, apns.CheckConfig} {
		if err := check(cfg); err != nil {
			return err
		}
	}
	return nil
}
