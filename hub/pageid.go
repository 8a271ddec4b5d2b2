package hub

import (
	"fmt"
	"strconv"
	"strings"
)

// A page stream's id is its whole position: where each member stands after
// the event that carries it, so that any instance can resume it with no
// session kept on the server. Its form:
//
//	p1,42:1708070460000-0,43:1708070461000-3,n:1708070460500-0
//
// "p1" (the version), then per member its key (a room id, or "n" for the
// user's notification log), a colon and its position's stream id. Members
// with no position yet are left out: they start live on resume. Only
// [0-9a-z:,-] occur; a member takes at most 62 bytes.
const pageIDVersion = "p1"

// pageIDMaxLen bounds an id a client may send: 1,000 rooms' worth (see
// STREAM_MAX_ROOMS), far beyond what the hub writes.
const pageIDMaxLen = 64 * 1024

// logKey is the user's log in a page id; rooms are keyed by their id, so the
// log's key in the map ParsePageID returns is 0.
const logKey = "n"

// appendIDLine appends the stream's "id: <page id>\n" line to b (under s.mu:
// it reads every member's position).
func (s *Stream) appendIDLine(b []byte) []byte {
	if b == nil {
		b = make([]byte, 0, 8+len(s.members)*32)
	}
	b = append(b, "id: "...)
	b = append(b, pageIDVersion...)
	for _, m := range s.members {
		if !m.placed {
			continue
		}
		b = append(b, ',')
		if m.roomID > 0 {
			b = strconv.AppendInt(b, m.roomID, 10)
		} else {
			b = append(b, logKey...)
		}
		b = append(b, ':')
		b = strconv.AppendUint(b, m.pos.ID.Ms, 10)
		b = append(b, '-')
		b = strconv.AppendUint(b, m.pos.ID.Seq, 10)
	}
	return append(b, '\n')
}

// ParsePageID decodes a page stream's id into each member's position: rooms
// by id, the user's log under 0. Anything not of the form above (a plain
// stream id included) is ErrInvalid.
func ParsePageID(id string) (map[int64]StreamID, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: Last-Event-ID is not a page stream id (%s)", ErrInvalid, why)
	}
	if len(id) > pageIDMaxLen {
		return nil, bad("too long")
	}
	parts := strings.Split(id, ",")
	if parts[0] != pageIDVersion {
		return nil, bad("no version")
	}
	out := make(map[int64]StreamID, len(parts)-1)
	for _, part := range parts[1:] {
		key, pos, ok := strings.Cut(part, ":")
		if !ok {
			return nil, bad("a member without a position")
		}
		var topic int64
		if key != logKey {
			r, ok := ParseID(key)
			if !ok {
				return nil, bad("a bad room id")
			}
			topic = r
		}
		if _, dup := out[topic]; dup {
			return nil, bad("a member named twice")
		}
		sid, err := ParsePosition(pos)
		if err != nil || !strings.Contains(pos, "-") {
			return nil, bad("a bad position")
		}
		out[topic] = sid
	}
	if len(out) == 0 {
		return nil, bad("no member")
	}
	return out, nil
}
