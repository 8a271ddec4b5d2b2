package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
)

// historyPage is how many entries one history read asks for.
const historyPage = 500

// tail returns the room's newest history entry (zero Event if the stream is empty).
func (h *Hub) tail(ctx context.Context, room int64) (*Event, error) {
	entries, err := Call(h.rdb, ctx, h.rdb.B().Xrevrange().Key(TopicHistoryKey(room)).End("+").Start("-").Count(1).Build(), rueidis.RedisResult.AsXRange)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return &Event{}, nil
	}
	return parseEntry(room, entries[0])
}

// oldest returns the room's oldest retained entry, or nil when history is empty.
func (h *Hub) oldest(ctx context.Context, room int64) (*Event, error) {
	page, err := h.xrange(ctx, room, "-", 1)
	if err != nil || len(page) == 0 {
		return nil, err
	}
	return page[0], nil
}

// EventAt returns the event with this id from history, ErrNotFound when it is gone.
func (h *Hub) EventAt(ctx context.Context, room int64, id StreamID) (*Event, error) {
	page, err := h.readFrom(ctx, room, id, 1)
	if err != nil {
		return nil, err
	}
	if len(page) == 0 || page[0].ID != id {
		return nil, fmt.Errorf("%w: event %s of room %d", ErrNotFound, id, room)
	}
	return page[0], nil
}

// readAfter returns up to count events strictly after id, oldest first.
func (h *Hub) readAfter(ctx context.Context, room int64, id StreamID, count int64) ([]*Event, error) {
	return h.xrange(ctx, room, "("+id.String(), count)
}

// readFrom returns up to count events from id on, id included.
func (h *Hub) readFrom(ctx context.Context, room int64, id StreamID, count int64) ([]*Event, error) {
	return h.xrange(ctx, room, id.String(), count)
}

func (h *Hub) xrange(ctx context.Context, room int64, start string, count int64) ([]*Event, error) {
	entries, err := h.xrangeEntries(ctx, room, start, count)
	if err != nil {
		return nil, err
	}
	out := make([]*Event, 0, len(entries))
	for _, e := range entries {
		ev, err := parseEntry(room, e)
		if err != nil {
			h.log.Warn("skipping malformed history entry", "room", room, "id", e.ID, "err", err)
			continue
		}
		out = append(out, ev)
	}
	return out, nil
}

// xrangeEntries reads up to count raw entries of a topic's history from start.
func (h *Hub) xrangeEntries(ctx context.Context, room int64, start string, count int64) ([]rueidis.XRangeEntry, error) {
	return Call(h.rdb, ctx, h.rdb.B().Xrange().Key(TopicHistoryKey(room)).Start(start).End("+").Count(count).Build(), rueidis.RedisResult.AsXRange)
}

// parseEntryView turns a history entry into the events API's view of it.
func parseEntryView(room int64, e rueidis.XRangeEntry) (EventView, error) {
	if _, err := ParseStreamID(e.ID); err != nil {
		return EventView{}, err
	}
	f := e.FieldValues
	v := EventView{ID: e.ID, EventType: f["type"], Data: json.RawMessage(f["data"]), Timestamp: f["timestamp"]}
	if len(v.Data) == 0 {
		v.Data = json.RawMessage("{}")
	}
	if p := f["publisher_id"]; p != "" {
		v.PublisherID = &p
	}
	return v, nil
}

// parseEntry turns a stream entry (type, data, publisher_id, timestamp, seq) into an Event.
func parseEntry(room int64, e rueidis.XRangeEntry) (*Event, error) {
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
	return newEvent(room, id, seq, f["type"], data, f["publisher_id"], f["timestamp"]), nil
}
