package hub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
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

// Event is one room event as the hub delivers it. Events from history and from
// the hub's own publish carry an ID and a Seq; a raw message a backend PUBLISHed
// straight to the channel and the hub's system.* events have neither.
type Event struct {
	Topic       int64 // a room, or a user's log (negative)
	ID          StreamID
	Seq         int64
	Type        string
	Data        json.RawMessage // the published object, compact
	PublisherID string          // decimal user id, or "" when none
	Timestamp   string          // RFC 3339
	Extra       string          // what its publisher kept with it in history (PublishRequest.Extra)

	frame []byte // the SSE bytes, built once for every subscriber

	traceparent string // the publish's trace context, when it was sampled (see tracing.go)

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
func newEvent(topic int64, id StreamID, seq int64, typ string, data []byte, publisher, ts string) *Event {
	e := &Event{Topic: topic, ID: id, Seq: seq, Type: typ, Data: data, PublisherID: publisher, Timestamp: ts}
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
	tsJSON := quoteJSON(ts)
	if bytes.Contains(data, []byte(`"timestamp"`)) {
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) == nil {
			m["timestamp"] = tsJSON
			if out, err := json.Marshal(m); err == nil {
				return out
			}
		}
	}
	return withField(data, `"timestamp":`+string(tsJSON))
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

// quoteJSON returns s as a JSON string: by hand when it needs no escaping
// (the timestamps the hub writes), else through encoding/json.
func quoteJSON(s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return b
		}
	}
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// NowTimestamp is the hub's event timestamp: RFC 3339 in UTC with milliseconds.
func NowTimestamp() string { return MsTimestamp(time.Now().UnixMilli()) }

// MsTimestamp is the time ms (Unix milliseconds) as the API shows times: RFC
// 3339 in UTC with milliseconds.
func MsTimestamp(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
