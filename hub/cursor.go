package hub

import (
	"context"
	"time"
)

// historyPage and historyPageBytes bound one catch-up or repair read: the
// events of a page are held in memory together.
const (
	historyPage      = 500
	historyPageBytes = 1 << 20
)

// cursorFirstChunk is how many entries a cursor's first read asks for; later
// reads size themselves by the events seen, so that a page of large events
// stops reading soon after its byte bound and a page of small ones takes few
// round trips.
const cursorFirstChunk = 20

// A cursor is a reader's place in one topic's history and the way on from
// there: room repair, a stream's catch-up and the events API read history
// through it. The rules of a gap are here and nowhere else:
//
//   - A position whose seq is known (the reader passed that event): the next
//     event must carry the next seq; another one means events are gone
//     (trimmed, or Redis lost them and numbering started again).
//   - A position whose seq is unknown (a client's id): history is read from
//     the position itself. Finding it tells its seq. Not finding it is a gap
//     when nothing at all follows it, when it is older than everything
//     retained, or when it is a client's resume point (the client got that id
//     from the hub, so Redis lost it: a failover that dropped the old
//     master's last writes). The hub's own position just before an event
//     (see justBefore) need not exist.
//   - The zero position is the start: no gap.
type cursor struct {
	h        *Hub
	topic    int64
	pos      Position
	resumed  bool          // pos is a client's resume point, not yet looked up
	retryFor time.Duration // how long a failing read is retried; 0: not at all
}

// newCursor places a cursor at pos in topic's history. resumed: pos is a
// client's resume point. retryFor: how long a read keeps retrying while
// Redis is away before next fails (0: the first failure does).
func (h *Hub) newCursor(topic int64, pos Position, resumed bool, retryFor time.Duration) *cursor {
	return &cursor{h: h, topic: topic, pos: pos, resumed: resumed, retryFor: retryFor}
}

// cursorPage is what one next read.
type cursorPage struct {
	gap    *Event   // a system.gap to pass on before events, nil when none
	events []*Event // the events after the position, oldest first
	more   bool     // history holds more after them
}

// next reads up to maxEvents events after the position (fewer once their data
// passes maxBytes), moves the position past them and says whether a gap
// comes first (see cursor). An error leaves the position where it was.
func (c *cursor) next(ctx context.Context, maxEvents, maxBytes int) (cursorPage, error) {
	var p cursorPage
	pos, size, first := c.pos, 0, true
	for {
		left := maxEvents - len(p.events)
		n := min(left, cursorFirstChunk)
		if len(p.events) > 0 && size > 0 {
			n = min(left, max(cursorFirstChunk, (maxBytes-size)*len(p.events)/size))
		}
		n++ // one more: does history hold more?
		start, lookup := "("+pos.ID.String(), first && pos.Seq == 0 && !pos.ID.IsZero()
		if lookup {
			start, n = pos.ID.String(), n+1
		}
		evs, raw, err := c.read(ctx, start, int64(n))
		if err != nil {
			return cursorPage{}, err
		}
		if lookup {
			if len(evs) > 0 && evs[0].ID == pos.ID {
				pos.Seq, evs = evs[0].Seq, evs[1:]
			} else if p.gap, err = c.lost(ctx, pos, evs); err != nil {
				return cursorPage{}, err
			}
		} else if first && pos.Seq > 0 && len(evs) > 0 && evs[0].Seq != pos.Seq+1 {
			p.gap = newGap(pos.ID, evs[0].ID)
		}
		if first && p.gap != nil {
			pos.forget()
		}
		first = false
		for _, ev := range evs {
			if len(p.events) == maxEvents || size >= maxBytes {
				p.more = true
				break
			}
			p.events = append(p.events, ev)
			size += len(ev.Data)
			pos.Advance(ev)
		}
		if p.more || raw < n {
			c.pos, c.resumed = pos, false
			return p, nil
		}
	}
}

// lost decides whether pos, which history does not hold, is a gap; evs is
// what history holds from pos on (a first read).
func (c *cursor) lost(ctx context.Context, pos Position, evs []*Event) (*Event, error) {
	if len(evs) == 0 {
		return newGap(pos.ID, StreamID{}), nil // nothing follows it: history is empty or lost its end
	}
	if !c.resumed && evs[0].ID.prev() == pos.ID {
		return nil, nil // the hub's own place just before an event
	}
	old, _, err := c.read(ctx, "-", 1)
	if err != nil {
		return nil, err
	}
	inside := len(old) > 0 && old[0].ID != evs[0].ID
	if inside && !c.resumed {
		return nil, nil // the hub's own place inside history: nothing was lost
	}
	oldest := evs[0].ID
	if len(old) > 0 {
		oldest = old[0].ID
	}
	return newGap(pos.ID, oldest), nil
}

// read is one history read, retried for retryFor while Redis is away.
func (c *cursor) read(ctx context.Context, start string, count int64) (evs []*Event, raw int, err error) {
	attempt := func(ctx context.Context) (bool, error) {
		evs, raw, err = c.h.xrangeRaw(ctx, c.topic, start, count)
		return false, err
	}
	if c.retryFor <= 0 {
		_, err = attempt(ctx)
		return evs, raw, err
	}
	err = Retry(ctx, c.retryFor, attempt, func(err error) {
		c.h.log.Warn("history read failed; retrying", "topic", c.topic, "err", err)
	})
	return evs, raw, err
}

// seekTail places the cursor at the topic's newest event (the start, when
// history is empty): a new reader follows live events from there.
func (c *cursor) seekTail(ctx context.Context) error {
	ev, err := c.h.tail(ctx, c.topic)
	if err != nil {
		return err
	}
	c.pos = Position{}
	if ev != nil {
		c.pos = Position{ID: ev.ID, Seq: ev.Seq}
	}
	return nil
}
