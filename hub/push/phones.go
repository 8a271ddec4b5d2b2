package push

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"roomhub/hub"
)

// Phones is what the phone channels (fcm, apns) share around their one
// request: the user's enabled devices of the platform, the item's face,
// the badge, a push to each device at once, and what each answer leaves
// behind (lastSentAt, a gone device removed, the platform's metrics).
type Phones struct {
	platform string
	devices  *Devices
	badge    Badge
	ledger   *Ledger
}

// NewPhones is platform's fan-out over devices, with badge's unread counts.
func NewPhones(core *hub.Hub, log *slog.Logger, platform string, devices *Devices, badge Badge) *Phones {
	return &Phones{platform: platform, devices: devices, badge: badge, ledger: NewLedger(core, log, platform)}
}

// Message is one push's content for every device of a user: the face of
// the hand-off's items and the person's unread count (-1: not known).
type Message struct {
	Face  Face
	Badge int
}

// Push sends a hand-off's items to each of user's enabled devices of the
// platform at once, send making one device's request, and answers each;
// a device the service says is gone is removed. No answer: the user has
// no enabled device there.
func (p *Phones) Push(ctx context.Context, user int64, items []json.RawMessage, send func(context.Context, Device, Message) Answer) ([]Answer, error) {
	devs, err := p.devices.Enabled(ctx, user, p.platform)
	if err != nil || len(devs) == 0 {
		return nil, err
	}
	f, ok := FaceOf(items)
	if !ok {
		return []Answer{{Code: "INVALID_ARGUMENT"}}, nil
	}
	m := Message{Face: f, Badge: -1} // no badge when the count cannot be read
	if n, err := p.badge.Unread(ctx, user); err == nil {
		m.Badge = int(n)
	}
	return Each(devs, func(d Device) Answer {
		start := time.Now()
		a := send(ctx, d, m)
		p.ledger.Settle(ctx, user, d.ID, start, a, func(ctx context.Context) error {
			_, err := p.devices.Remove(ctx, user, p.platform, d.Token)
			return err
		})
		return a
	}), nil
}
