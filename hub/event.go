package hub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Event types the hub emits itself.
const (
	PresenceEventType = "presence.update"
	GapEventType      = "system.gap"
	LaggedEventType   = "system.lagged"
	EvictedEventType  = "system.evicted"
)

// StreamID is a Redis stream entry id, ms-seq. The zero value means "none".
type StreamID struct {
	Ms, Seq uint64
}

// ParseStreamID parses "ms-seq" or a bare "ms" (meaning ms-0). "0" is the zero id.
func ParseStreamID(s string) (StreamID, error) {
	if s == "" || len(s) > 41 {
		return StreamID{}, fmt.Errorf("%w: stream id %q", ErrInvalid, s)
	}
	msPart, seqPart, hasSeq := strings.Cut(s, "-")
	ms, err := parseDigits(msPart)
	if err != nil {
		return StreamID{}, fmt.Errorf("%w: stream id %q", ErrInvalid, s)
	}
	var seq uint64
	if hasSeq {
		if seq, err = parseDigits(seqPart); err != nil {
			return StreamID{}, fmt.Errorf("%w: stream id %q", ErrInvalid, s)
		}
	}
	return StreamID{ms, seq}, nil
}

// ParsePosition parses a client's position (since, Last-Event-ID): a stream
// id, except the largest one, which Redis refuses as the exclusive start of a
// range (nothing can follow it).
func ParsePosition(s string) (StreamID, error) {
	id, err := ParseStreamID(s)
	if err == nil && id == (StreamID{^uint64(0), ^uint64(0)}) {
		err = fmt.Errorf("%w: stream id %q: nothing can follow it", ErrInvalid, s)
	}
	return id, err
}

// parseDigits accepts only ASCII digits (no sign, no spaces), at most 20 of them.
func parseDigits(s string) (uint64, error) {
	if s == "" || len(s) > 20 {
		return 0, strconv.ErrSyntax
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	return strconv.ParseUint(s, 10, 64)
}

// String formats id as Redis does: ms-seq.
func (id StreamID) String() string {
	return strconv.FormatUint(id.Ms, 10) + "-" + strconv.FormatUint(id.Seq, 10)
}

// prev returns the id just before id (the zero id stays zero).
func (id StreamID) prev() StreamID {
	switch {
	case id.Seq > 0:
		return StreamID{id.Ms, id.Seq - 1}
	case id.Ms > 0:
		return StreamID{id.Ms - 1, ^uint64(0)}
	}
	return id
}

// IsZero reports whether id is the zero id (no id).
func (id StreamID) IsZero() bool { return id == StreamID{} }

// Less reports whether id comes before o in the stream.
func (id StreamID) Less(o StreamID) bool {
	return id.Ms < o.Ms || (id.Ms == o.Ms && id.Seq < o.Seq)
}

// Event is one room event as the hub delivers it. Events from history and from
// the hub's own publish carry an ID and a Seq; a raw message a backend PUBLISHed
// straight to the channel and the hub's system.* events have neither.
type Event struct {
	Room        int64
	ID          StreamID
	Seq         int64
	Type        string
	Data        json.RawMessage // the published object, compact
	PublisherID string          // decimal user id, or "" when none
	Timestamp   string          // RFC 3339

	frame []byte // the SSE bytes, built once for every subscriber

	pageOnce sync.Once
	page     []byte // the page streams' frame, built on first use
}

// Frame returns the event's SSE bytes: event, id (when it has one), data, blank line.
func (e *Event) Frame() []byte { return e.frame }

// pageFrame returns the event's bytes on a page stream, built once for all of
// them: no id line (each stream writes its own before it), and in data the
// room ("roomId") for a room's event, or "notifications":true for a system
// event of the user's log (roomID 0); the log's own events are unchanged.
func (e *Event) pageFrame(roomID int64) []byte {
	e.pageOnce.Do(func() {
		data := e.frame
		if i := bytes.Index(data, []byte("\ndata: ")); i >= 0 && len(data) >= i+9 {
			data = data[i+7 : len(data)-2]
		}
		switch {
		case roomID > 0:
			data = withField(data, `"roomId":`+strconv.FormatInt(roomID, 10))
		case !e.HasID():
			data = withField(data, `"notifications":true`)
		}
		e.page = sseFrame(e.Type, StreamID{}, data)
	})
	return e.page
}

// withField returns a copy of the JSON object data with one more member
// (written last, so that it wins over one of the same name).
func withField(data []byte, member string) []byte {
	d := bytes.TrimSpace(data)
	if len(d) < 2 || d[0] != '{' || d[len(d)-1] != '}' {
		return data
	}
	out := make([]byte, 0, len(d)+len(member)+1)
	out = append(out, d[:len(d)-1]...)
	if len(bytes.TrimSpace(d[1:len(d)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, member...)
	return append(out, '}')
}

// HasID reports whether the event is in history (and so moves the client's resume point).
func (e *Event) HasID() bool { return !e.ID.IsZero() }

// newEvent builds an event and its SSE frame. data must be a compact JSON
// object; ts, when not "", is added to it as "timestamp" (a user log's events
// carry their own).
func newEvent(room int64, id StreamID, seq int64, typ string, data []byte, publisher, ts string) *Event {
	e := &Event{Room: room, ID: id, Seq: seq, Type: typ, Data: data, PublisherID: publisher, Timestamp: ts}
	if ts != "" {
		data = withTimestamp(data, ts)
	}
	e.frame = sseFrame(typ, id, data)
	return e
}

// newSystemEvent builds a per-connection system.* event; it has no id.
func newSystemEvent(typ string, payload any) *Event {
	data, err := json.Marshal(payload)
	if err != nil {
		data = []byte("{}")
	}
	return &Event{Type: typ, Data: data, frame: sseFrame(typ, StreamID{}, data)}
}

// SystemFrame returns the SSE bytes of a system.* event with that payload.
func SystemFrame(typ string, payload any) []byte { return newSystemEvent(typ, payload).frame }

func sseFrame(typ string, id StreamID, data []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(typ) + len(data) + 48)
	b.WriteString("event: ")
	b.WriteString(typ)
	if !id.IsZero() {
		b.WriteString("\nid: ")
		b.WriteString(id.String())
	}
	b.WriteString("\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	return b.Bytes()
}

// withTimestamp returns the object data with "timestamp" set to ts.
func withTimestamp(data []byte, ts string) []byte {
	tsJSON, _ := json.Marshal(ts)
	if bytes.Contains(data, []byte(`"timestamp"`)) {
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) == nil {
			m["timestamp"] = tsJSON
			if out, err := json.Marshal(m); err == nil {
				return out
			}
		}
	}
	d := bytes.TrimSpace(data)
	if len(d) < 2 || d[0] != '{' || d[len(d)-1] != '}' {
		return data
	}
	out := make([]byte, 0, len(d)+len(tsJSON)+16)
	out = append(out, d[:len(d)-1]...)
	if len(bytes.TrimSpace(d[1:len(d)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"timestamp":`...)
	out = append(out, tsJSON...)
	return append(out, '}')
}

// CompactObject checks that raw is a JSON object and returns it compacted, so
// that it fits on one SSE data line.
func CompactObject(raw []byte) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("%w: data must be a JSON object", ErrInvalid)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, fmt.Errorf("%w: data is not valid JSON", ErrInvalid)
	}
	return b.Bytes(), nil
}

// NowTimestamp is the hub's event timestamp: RFC 3339 in UTC with milliseconds.
func NowTimestamp() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00") }
