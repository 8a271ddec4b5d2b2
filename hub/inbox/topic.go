package inbox

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"roomhub/hub"
)

// MaxExcluded bounds excludeIds: the followers a topic publish passes over.
const MaxExcluded = 100

// Fanouts runs topic publishes' fan-outs to the topics' followers, in the
// background and durably (package topics). The inbox starts one for each
// topic publish, the outbox sweep too for a publish whose instance died
// before it did.
type Fanouts interface {
	// Start records the fan-out of n to topic's followers at this moment,
	// but skip (the excluded and the direct recipients, who get n from the
	// publish itself), and starts it, once: the recipients, direct ones
	// (len(direct)) included. A repeat starts nothing and answers the
	// first's.
	Start(ctx context.Context, n Notice, topic string, skip []int64, direct int) (int64, error)
	// Recipients is the recipients of fan-out id, as Start answered (0 when
	// its record is gone: kept DELIVERY_RECORD_DAYS).
	Recipients(ctx context.Context, id string) (int64, error)
}

// UseFanouts makes publishes with a topic fan out through f. Call it before
// the core starts; without it a publish naming a topic is refused.
func (ib *Inbox) UseFanouts(f Fanouts) { ib.fanouts = f }

// Notice is a published event on its way into inboxes, as a fan-out keeps
// it (Encode) and delivers it, a step at a time (DeliverTo).
type Notice struct{ n notice }

// ID is the notice's notification id, which is its fan-out's id too.
func (n Notice) ID() string { return NotificationID(n.n.room, n.n.id) }

// noticeJSON is a Notice in Redis.
type noticeJSON struct {
	Room      int64           `json:"r"`
	ID        string          `json:"i"`
	Type      string          `json:"t"`
	Data      json.RawMessage `json:"d"`
	Publisher string          `json:"p,omitempty"`
	TS        string          `json:"ts"`
	Opts      Options         `json:"o"`
}

// Encode is n as DecodeNotice reads it.
func (n Notice) Encode() string {
	b, _ := json.Marshal(noticeJSON{Room: n.n.room, ID: n.n.id.String(), Type: n.n.typ, Data: n.n.data,
		Publisher: n.n.publisher, TS: n.n.ts, Opts: n.n.opts})
	return string(b)
}

// DecodeNotice reads what Encode wrote.
func DecodeNotice(s string) (Notice, error) {
	var j noticeJSON
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return Notice{}, fmt.Errorf("%w: a fan-out's notice: %v", hub.ErrRedisReply, err)
	}
	id, err := hub.ParseStreamID(j.ID)
	if err != nil {
		return Notice{}, fmt.Errorf("%w: a fan-out's notice id %q", hub.ErrRedisReply, j.ID)
	}
	return Notice{notice{room: j.Room, id: id, typ: j.Type, data: j.Data, publisher: j.Publisher, ts: j.TS, opts: j.Opts}}, nil
}

// DeliverTo puts n into users' inboxes, with their deliveries beyond the
// tab, exactly as a publish naming them would: one step of a fan-out.
// Each write is idempotent, so a step done twice reaches each user once.
func (ib *Inbox) DeliverTo(ctx context.Context, n Notice, users []int64) error {
	return ib.deliverTo(ctx, n.n, users)
}

// topicNote is the outbox note of a publish: its direct recipients, then,
// with a topic, the topic and the excluded ("<ids>\n<topic>\n<ids>"), so
// that the sweep can finish it, fan-out included.
func topicNote(recipients []int64, topic string, exclude []int64) string {
	note := hub.JoinIDs(recipients)
	if topic != "" {
		note += "\n" + topic + "\n" + hub.JoinIDs(exclude)
	}
	return note
}

// parseNote reads topicNote's note.
func parseNote(note string) (recipients []int64, topic string, exclude []int64) {
	parts := strings.SplitN(note, "\n", 3)
	recipients = hub.ParseIDs(parts[0])
	if len(parts) == 3 {
		topic, exclude = parts[1], hub.ParseIDs(parts[2])
	}
	return recipients, topic, exclude
}

// checkTopic checks a publish's topic part: exclude only with a topic, at
// most MaxExcluded positive ids (repeats dropped); a topic only where
// fan-outs run.
func (ib *Inbox) checkTopic(topic string, exclude []int64) ([]int64, error) {
	if topic == "" {
		if len(exclude) > 0 {
			return nil, fmt.Errorf("%w: excludeIds goes with topic", hub.ErrInvalid)
		}
		return nil, nil
	}
	if ib.fanouts == nil {
		return nil, fmt.Errorf("%w: topics are not served here", hub.ErrInvalid)
	}
	return distinctIDs(exclude, "excludeIds", MaxExcluded)
}

// topicBody is the idempotency body's topic part: a retry naming another
// topic, or excluding others, is another publish.
func topicBody(topic string, exclude []int64) string {
	if topic == "" {
		return ""
	}
	return "\x00topic=" + topic + " exclude=" + hub.JoinIDs(exclude)
}

// startFanout starts n's fan-out to topic's followers (those not excluded,
// and not among the direct recipients, who get it from the publish).
func (ib *Inbox) startFanout(ctx context.Context, n notice, topic string, exclude, recipients []int64) (*hub.FanoutRef, error) {
	skip := append(slices.Clone(exclude), recipients...)
	slices.Sort(skip)
	skip = slices.Compact(skip)
	total, err := ib.fanouts.Start(ctx, Notice{n}, topic, skip, len(recipients))
	if err != nil {
		return nil, err
	}
	return &hub.FanoutRef{ID: NotificationID(n.room, n.id), Recipients: total}, nil
}

// FanoutOf is the fan-out of d's publish answered res, a repeat of one
// that finished: nil when d names no topic.
func (ib *Inbox) FanoutOf(ctx context.Context, d Draft, res hub.PublishResult) (*hub.FanoutRef, error) {
	if d.topic == "" {
		return nil, nil
	}
	id, err := hub.ParseStreamID(res.StreamID)
	if err != nil {
		return nil, fmt.Errorf("%w: publish id %q", hub.ErrRedisReply, res.StreamID)
	}
	ref := hub.FanoutRef{ID: NotificationID(d.Core.Room, id)}
	if ref.Recipients, err = ib.fanouts.Recipients(ctx, ref.ID); err != nil {
		return nil, err
	}
	return &ref, nil
}
