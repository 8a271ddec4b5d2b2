package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
)

// History is every event of a topic with its id and seq: a room's stream
// (EventsKey), or a user's log, which the inbox keeps and reads (UserLogs).
// This file reads it; cursor.go moves through it.

// UserLogs reads users' logs: the history of their notification events.
type UserLogs interface {
	// ReadLog returns up to count events of user's log from start: "-"
	// the oldest, an id (that event or the first after it), "(" and an id
	// (the first after it), or "+" the newest alone; oldest first. looked
	// is how many entries the read covered: fewer than count means the
	// log holds no more.
	ReadLog(ctx context.Context, user int64, start string, count int64) (evs []LogEvent, looked int, err error)
}

// LogEvent is one event of a user's log.
type LogEvent struct {
	ID   StreamID
	Seq  int64
	Type string
	Data []byte
}

// UseUserLogs makes users' streams read their logs from l. Call it before
// the core starts.
func (h *Hub) UseUserLogs(l UserLogs) { h.logs = l }

// readLog reads a user topic's log through UseUserLogs' reader.
func (h *Hub) readLog(ctx context.Context, topic int64, start string, count int64) ([]*Event, int, error) {
	if h.logs == nil {
		return nil, 0, nil
	}
	evs, looked, err := h.logs.ReadLog(ctx, -topic, start, count)
	out := make([]*Event, len(evs))
	for i, e := range evs {
		out[i] = newEvent(topic, e.ID, e.Seq, e.Type, e.Data, "", "")
	}
	return out, looked, err
}

// tail returns the topic's newest event, nil when history is empty.
func (h *Hub) tail(ctx context.Context, topic int64) (*Event, error) {
	if topic < 0 {
		evs, _, err := h.readLog(ctx, topic, "+", 1)
		if err != nil || len(evs) == 0 {
			return nil, err
		}
		return evs[0], nil
	}
	entries, err := Call(h.rdb, ctx, h.rdb.B().Xrevrange().Key(EventsKey(topic)).End("+").Start("-").Count(1).Build(), rueidis.RedisResult.AsXRange)
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	return parseEntry(topic, entries[0])
}

// EventAt returns the event with this id from a room's history, ErrNotFound
// when it is gone.
func (h *Hub) EventAt(ctx context.Context, room int64, id StreamID) (*Event, error) {
	page, err := h.xrange(ctx, room, id.String(), 1)
	if err != nil {
		return nil, err
	}
	if len(page) == 0 || page[0].ID != id {
		return nil, fmt.Errorf("%w: event %s of room %d", ErrNotFound, id, room)
	}
	return page[0], nil
}

// xrange reads up to count events of a topic's history from start (an id,
// "(id" for after it, or "-"), oldest first, skipping malformed entries.
func (h *Hub) xrange(ctx context.Context, topic int64, start string, count int64) ([]*Event, error) {
	page, _, err := h.xrangeRaw(ctx, topic, start, count)
	return page, err
}

// xrangeRaw is xrange that also tells how many entries Redis returned,
// malformed ones included.
func (h *Hub) xrangeRaw(ctx context.Context, topic int64, start string, count int64) (page []*Event, raw int, err error) {
	if topic < 0 {
		return h.readLog(ctx, topic, start, count)
	}
	entries, err := Call(h.rdb, ctx, h.rdb.B().Xrange().Key(EventsKey(topic)).Start(start).End("+").Count(count).Build(), rueidis.RedisResult.AsXRange)
	if err != nil {
		return nil, 0, err
	}
	page = make([]*Event, 0, len(entries))
	for _, e := range entries {
		ev, err := parseEntry(topic, e)
		if err != nil {
			h.log.Warn("skipping malformed history entry", "topic", topic, "id", e.ID, "err", err)
			continue
		}
		page = append(page, ev)
	}
	return page, len(entries), nil
}

// parseEntry turns a stream entry (type, data, publisher_id, timestamp, seq) into an Event.
func parseEntry(topic int64, e rueidis.XRangeEntry) (*Event, error) {
	id, err := ParseStreamID(e.ID)
	if err != nil {
		return nil, err
	}
	f := e.FieldValues
	seq, err := strconv.ParseInt(f["seq"], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: entry %s has no seq", ErrRedisReply, e.ID)
	}
	data := []byte(f["data"])
	if len(data) == 0 {
		data = []byte("{}")
	}
	ev := newEvent(topic, id, seq, f["type"], data, f["publisher_id"], f["timestamp"])
	ev.Extra = f["x"]
	return ev, nil
}

// EventView is an event as the events API shows it.
type EventView struct {
	ID          string          `json:"id"`
	EventType   string          `json:"eventType"`
	Data        json.RawMessage `json:"data"`
	PublisherID *string         `json:"publisherId"`
	Timestamp   string          `json:"timestamp"`
}

// View is the event as the events API shows it.
func (e *Event) View() EventView {
	v := EventView{ID: e.ID.String(), EventType: e.Type, Data: e.Data, Timestamp: e.Timestamp}
	if e.PublisherID != "" {
		pub := e.PublisherID
		v.PublisherID = &pub
	}
	return v
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

// Events returns up to count events strictly after since, oldest first, at
// most about eventsPageBytes of data.
func (h *Hub) Events(ctx context.Context, room int64, since StreamID, count int) (EventsPage, error) {
	c := h.newCursor(room, Position{ID: since}, false, 0)
	page, err := c.next(ctx, min(count, MaxEventsPage), eventsPageBytes)
	if err != nil {
		return EventsPage{}, err
	}
	p := EventsPage{Events: make([]EventView, 0, len(page.events)), HasMore: page.more}
	for _, ev := range page.events {
		p.Events = append(p.Events, ev.View())
	}
	if n := len(p.Events); n > 0 {
		last := p.Events[n-1].ID // a copy: go1.26 may miscompile &slice[i].Field (golang/go#81612)
		p.LastID = &last
	}
	return p, nil
}
