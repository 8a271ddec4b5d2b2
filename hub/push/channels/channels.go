// Package channels builds the channels the hub sends itself (webpush, fcm,
// apns) from their configurations, with the devices they share: what main
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

// Config is the channels' configurations, and which of them delivery has
// on (DELIVERY_CHANNELS) with its hand-off limit, which bounds a push too.
type Config struct {
	Delivery delivery.Config
	WebPush  webpush.Config
	FCM      fcm.Config
	APNS     apns.Config
}

// LoadConfig reads each channel's variables through lookup and checks them
// against d, the channels on, and core (the embedded dev mode). The first
// bad value is a *hub.ConfigError naming its variable.
func LoadConfig(lookup func(string) (string, bool), d delivery.Config, core hub.Config) (Config, error) {
	c := Config{Delivery: d}
	var err error
	if c.WebPush, err = webpush.LoadConfig(lookup, d.On(push.WebPushChannel), core); err != nil {
		return Config{}, err
	}
	if c.FCM, err = fcm.LoadConfig(lookup, d.On(push.FCMChannel)); err != nil {
		return Config{}, err
	}
	if c.APNS, err = apns.LoadConfig(lookup, d.On(push.APNSChannel)); err != nil {
		return Config{}, err
	}
	return c, nil
}

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

// New builds the channels of cfg that are on; call it before core.Start.
// badge is the people's unread counts (the inbox) that phones show. A bad
// key is a *hub.ConfigError naming its variable. tlsConf (nil: the system's
// roots) is for tests that stand up the services.
func New(ctx context.Context, core *hub.Hub, cfg Config, log *slog.Logger, badge push.Badge, tlsConf *tls.Config) (*Channels, error) {
	on, timeout := cfg.Delivery.On, cfg.Delivery.Timeout
	c := &Channels{Senders: map[string]delivery.Sender{}}
	if on(push.WebPushChannel) || on(push.FCMChannel) || on(push.APNSChannel) {
		c.Devices = push.NewDevices(core)
	}
	if on(push.WebPushChannel) {
		wp, err := webpush.New(ctx, core, cfg.WebPush, timeout, log, tlsConf)
		if err != nil {
			return nil, err
		}
		c.WebPush, c.Senders[push.WebPushChannel] = wp, wp
		c.closers = append(c.closers, wp.Close)
	}
	if on(push.FCMChannel) {
		f, err := fcm.New(core, cfg.FCM, timeout, log, c.Devices, badge, tlsConf)
		if err != nil {
			return nil, err
		}
		c.Senders[push.FCMChannel] = f
		c.closers = append(c.closers, f.Close)
	}
	if on(push.APNSChannel) {
		a, err := apns.New(core, cfg.APNS, timeout, log, c.Devices, badge, tlsConf)
		if err != nil {
			return nil, err
		}
		c.Senders[push.APNSChannel] = a
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
