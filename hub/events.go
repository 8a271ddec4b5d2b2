package hub

import (
	"context"
	"encoding/json"
)

// EventView is an event as the events API shows it.
type EventView struct {
	ID          string          `json:"id"`
	EventType   string          `json:"eventType"`
	Data        json.RawMessage `json:"data"`
	PublisherID *string         `json:"publisherId"`
	Timestamp   string          `json:"timestamp"`
}

// EventsPage is one page of a room's history.
type EventsPage struct {
	Events  []EventView `json:"events"`
	LastID  *string     `json:"lastId"`
	HasMore bool        `json:"hasMore"`
}

// MaxEventsPage is the largest page the events API returns.
const MaxEventsPage = 500

// eventsPageBytes bounds the data of one events page: past it the page ends
// early (hasMore), whatever count asked for.
const eventsPageBytes = 1 << 20

// eventsChunk is how many entries one read of a page asks for, so that a
// page of large events stops reading soon after eventsPageBytes.
const eventsChunk = 20

// Events returns up to count events strictly after since, oldest first, at
// most eventsPageBytes of data. It builds no SSE frames: nothing streams them.
func (h *Hub) Events(ctx context.Context, room int64, since StreamID, count int) (EventsPage, error) {
	count = min(count, MaxEventsPage)
	p := EventsPage{Events: []EventView{}}
	from, size := since, 0
	for {
		entries, err := h.xrangeEntries(ctx, room, "("+from.String(), int64(min(eventsChunk, count-len(p.Events)+1)))
		if err != nil {
			return EventsPage{}, err
		}
		for _, e := range entries {
			if len(p.Events) == count || size >= eventsPageBytes {
				p.HasMore = true
				break
			}
			ev, err := parseEntryView(room, e)
			if err != nil {
				h.log.Warn("skipping malformed history entry", "room", room, "id", e.ID, "err", err)
				continue
			}
			from, _ = ParseStreamID(e.ID)
			size += len(ev.Data)
			p.Events = append(p.Events, ev)
		}
		if p.HasMore || len(entries) < eventsChunk || len(p.Events) == count {
			break
		}
	}
	if n := len(p.Events); n > 0 {
		p.LastID = &p.Events[n-1].ID
	}
	return p, nil
}
