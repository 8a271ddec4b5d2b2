package hub

import (
	"fmt"
	"strconv"
	"strings"
)

// Ids: history's stream ids and the positive ids of rooms and users.

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

// ParseID parses a positive 64-bit id (a room's, a user's) written in plain digits.
func ParseID(s string) (int64, bool) {
	n, err := parseDigits(s)
	if err != nil || n == 0 || n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}

// ParseRoomID parses a room id from a path: a positive 64-bit integer.
func ParseRoomID(s string) (int64, error) {
	n, ok := ParseID(s)
	if !ok {
		return 0, ErrInvalid
	}
	return n, nil
}

// JoinIDs writes ids comma separated ("" for none), as notes and records
// keep lists of users.
func JoinIDs(ids []int64) string {
	b := make([]byte, 0, len(ids)*8)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(b)
}

// ParseIDs reads JoinIDs' list, in its order; what is not an id is left out.
func ParseIDs(csv string) []int64 {
	var ids []int64
	for _, f := range strings.Split(csv, ",") {
		if u, ok := ParseID(f); ok {
			ids = append(ids, u)
		}
	}
	return ids
}
