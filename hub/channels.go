package hub

import (
	"context"
	"sync"

	"github.com/redis/rueidis"
)

// channelSet is what PUBSUB_MODE=channels subscribes on one Redis: the
// channels of the topics with local members. Topics come and go in want;
// the listener's own connection follows it with SUBSCRIBE and UNSUBSCRIBE
// in batches (syncChannels), so a topic costs a few map entries here and a
// channel in Redis, not a goroutine or a connection.
type channelSet struct {
	mu        sync.Mutex
	want      map[int64]struct{} // topics with local members
	have      map[int64]struct{} // topics the listener's connection subscribed (maybe unconfirmed)
	confirmed map[int64]struct{} // those of have whose subscription Redis confirmed
	changed   chan struct{}      // cap 1: want changed since the listener last looked
}

func newChannelSet() *channelSet {
	return &channelSet{want: map[int64]struct{}{}, have: map[int64]struct{}{}, confirmed: map[int64]struct{}{},
		changed: make(chan struct{}, 1)}
}

// add asks for topic id's channels and reports whether the connection
// carries them already, confirmed (a topic closed and opened again
// meanwhile).
func (c *channelSet) add(id int64) (carried bool) {
	c.mu.Lock()
	c.want[id] = struct{}{}
	_, carried = c.confirmed[id]
	c.mu.Unlock()
	c.poke()
	return carried
}

// remove gives topic id's channels up.
func (c *channelSet) remove(id int64) {
	c.mu.Lock()
	delete(c.want, id)
	c.mu.Unlock()
	c.poke()
}

// carried reports whether the connection carries topic id's channels,
// confirmed.
func (c *channelSet) carried(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.confirmed[id]
	return ok
}

// confirm records Redis' confirmation of topic id's subscription, unless
// the connection gave it up meanwhile.
func (c *channelSet) confirm(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.have[id]; ok {
		c.confirmed[id] = struct{}{}
	}
}

func (c *channelSet) poke() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// diff returns the topics wanted and not carried, and those carried no
// longer wanted, each at most limit. The latter are given up at once, before
// their UNSUBSCRIBE is sent: a publish that Redis runs after it reaches no
// one, and must not look like a listener left on the wrong node
// (noListenerHeard) while the reply is on its way.
func (c *channelSet) diff(limit int) (add, drop []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.want {
		if _, ok := c.have[id]; !ok && len(add) < limit {
			add = append(add, id)
		}
	}
	for id := range c.have {
		if _, ok := c.want[id]; !ok && len(drop) < limit {
			drop = append(drop, id)
		}
	}
	for _, id := range drop {
		delete(c.have, id)
		delete(c.confirmed, id)
	}
	return add, drop
}

// carry records that the connection subscribes ids (diff gives topics up).
func (c *channelSet) carry(ids []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		c.have[id] = struct{}{}
	}
}

// reset forgets what a lost connection carried.
func (c *channelSet) reset() {
	c.mu.Lock()
	c.have, c.confirmed = map[int64]struct{}{}, map[int64]struct{}{}
	c.mu.Unlock()
}

// channelBatch bounds the channels of one SUBSCRIBE or UNSUBSCRIBE.
const channelBatch = 500

// topicChannels lists topic id's channels: a room's own (room:{42}) and the
// plain form backends may PUBLISH to (room:42); a user's log's.
func topicChannels(ids []int64) []string {
	out := make([]string, 0, 2*len(ids))
	for _, id := range ids {
		out = append(out, TopicChannel(id))
		if id > 0 {
			out = append(out, "room:"+itoa(id))
		}
	}
	return out
}

// syncChannels keeps dc subscribed to what h.channels wants until ctx ends
// or a command fails (the connection is then useless: the listener
// reconnects and starts from nothing). Each confirmed subscription makes its
// topic replay what it may have missed (see onChannelSubscribed).
func (h *Hub) syncChannels(ctx context.Context, dc rueidis.DedicatedClient) error {
	defer h.channels.reset()
	for {
		add, drop := h.channels.diff(channelBatch)
		if len(add) == 0 && len(drop) == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-h.channels.changed:
				continue
			}
		}
		if len(drop) > 0 {
			if err := h.subscribeCmd(ctx, dc, dc.B().Unsubscribe().Channel(topicChannels(drop)...).Build()); err != nil {
				return err
			}
		}
		if len(add) > 0 {
			// Before the command: confirmations may arrive before it returns.
			h.channels.carry(add)
			if err := h.subscribeCmd(ctx, dc, dc.B().Subscribe().Channel(topicChannels(add)...).Build()); err != nil {
				return err
			}
		}
	}
}

func (h *Hub) subscribeCmd(ctx context.Context, dc rueidis.DedicatedClient, cmd rueidis.Completed) error {
	sctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	if err := dc.Do(sctx, cmd).Error(); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// onChannelSubscribed is told that channel's subscription is confirmed: its
// topic is carried, and replays from history what was published before
// (on the topic's own form only; the plain form carries no ids).
func (h *Hub) onChannelSubscribed(channel string) {
	id, ok := topicFromChannel(channel)
	if !ok || channel != TopicChannel(id) {
		return
	}
	h.channels.confirm(id)
	if t := h.topic(id); t != nil {
		t.markCarried()
		h.requestRepair(t)
	}
}
