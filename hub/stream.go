package hub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// A stream's life, in three files (hub/doc.go has the picture): this one
// opens, joins and hands over (1–3), stream_write.go delivers (4),
// stream_end.go ends (6); the cursor (cursor.go) reads its history.
//
//  1. Open subscribes every member (a room, or the user's log) to its local
//     topic, so that nothing published from then on is missed, and takes the
//     client's resume point. It answers at once.
//  2. Join counts the connection toward the per-user cap, loads the user's
//     mutes and makes the user present in each room (bounded by ctx).
//  3. Start (a wire that can write without blocking: a hijacked socket) or
//     Serve (one that cannot: HTTP/2, TLS) hands the connection over. From
//     then on the hub owns it.
//  4. Delivery. A live event reaches offer, on the room's fan-out. When the
//     stream is idle, offer judges it by the member's Position and writes the
//     shared frame to the socket at once, without blocking. Otherwise (the
//     socket took less than all, a catch-up runs, a wire that can only block)
//     the event waits in a queue bounded in events and bytes, and a worker
//     drains it: a goroutine that lives only while there is work. A full
//     queue drops the event and marks its member behind: the worker re-reads
//     that member's history (which holds every event with an id) from its
//     position, through a cursor. The worker also runs the resume catch-up.
//  5. The hub's clock (clock.go) sends keepalives, ends expired tokens,
//     refreshes presence and re-checks room access for all streams at once.
//  6. End: the client leaves (the poller or the request's context tells),
//     a write fails, the token expires, or a last frame is sent first
//     (system.evicted, system.lagged, retry: at shutdown). The members
//     unsubscribe at once; presence and the cap are released in the background.

// ErrLagged ends a stream whose client cannot keep up: events were dropped for
// it while its socket would not take bytes (a write blocked for SlowWrite).
// Drops alone (a burst, a replay, a busy hub) only make the stream catch up
// from history.
var ErrLagged = errors.New("client lagged")

// catchUpRetryFor is how long a catch-up keeps retrying while Redis is away
// before the stream ends (the browser then resumes from its last id).
const catchUpRetryFor = 30 * time.Second

// queueMaxBytes bounds the bytes of the events a stream's queue holds, beside
// its SSE_CHANNEL_CAPACITY events.
const queueMaxBytes = 1 << 20

// Wire is where a stream's bytes go.
type Wire interface {
	// TryWrite writes what the socket takes now, without blocking, and
	// returns how much (0 when it takes nothing). A wire that can only block
	// returns errors.ErrUnsupported; it is served with Serve.
	TryWrite(b net.Buffers) (int64, error)
	// Write writes all of b, failing when that takes longer than timeout.
	Write(b net.Buffers, timeout time.Duration) error
	// Close ends the connection. The stream calls it once, when it ends.
	Close() error
}

// StreamSpec says what a client asked to stream.
type StreamSpec struct {
	User    int64
	Rooms   []int64   // the rooms, distinct
	Log     bool      // the user's notification log
	Page    bool      // a page stream: page ids, and "roomId" in room events' data
	Resume  string    // Last-Event-ID (else lastEventId): "" means live only
	Expires time.Time // the token's expiry: the stream ends then
	Grant   Grant     // the token's room grant, for re-checks
}

// Stream is one client's SSE connection: one member per room it follows, and
// one for the user's log. Create it with OpenStream.
//
// A hub holds one per open connection, idle most of the time: its fields are
// ordered so that the struct packs without padding (the bools together), and
// its times are unix nanoseconds.
type Stream struct {
	h       *Hub
	User    int64
	conn    uint64 // names the stream in Redis (connID)
	expires int64  // unix nanos of the token's expiry; 0: none
	grant   Grant
	members []*member
	mutes   MuteSet // room members' muted types, set by Join; nil: none

	mu         sync.Mutex
	wire       Wire
	queue      []queued
	queueBytes int
	partial    []byte // bytes of a frame the socket took only part of: they go first
	final      []byte
	wake       chan struct{} // Serve: work arrived
	done       chan struct{} // closed when the stream ends; made by Done
	lastWrite  atomic.Int64  // unix nanos of the last write, for keepalives

	// Owned by the clock goroutine: unix nanos of the next room re-check.
	nextRecheck int64

	page    bool // set at open
	inline  bool // the wire can write without blocking (Start)
	started bool
	working bool // a worker goroutine owns writing (inline wires)
	dropped bool // events were dropped since the members last caught up
	ending  bool // a last frame is due: nothing else is written
	closed  bool
}

// member is a stream's subscription to one topic, with its position there.
type member struct {
	s       *Stream
	topic   *topic // the local topic
	topicID int64
	roomID  int64    // the room; 0 for the user's log
	pos     Position // guarded by s.mu
	placed  bool     // pos is known (a resume point, or the topic's position when joined)
	catchUp bool     // history after pos must be sent before live events
	resumed bool     // pos is the client's resume point, not yet checked against history
	at      int32    // index in topic.subs (under the topic's lock)
}

// queued is one item waiting for the worker: an event of a member, or raw
// bytes (a keepalive).
type queued struct {
	m   *member
	ev  *Event
	raw []byte
}

// OpenStream subscribes a stream for spec. Resume is a stream id for a stream
// of one member, a page id (see pageid.go) for a page stream. It does not
// touch Redis.
func (h *Hub) OpenStream(spec StreamSpec) (*Stream, error) {
	if len(spec.Rooms) == 0 && !spec.Log {
		return nil, fmt.Errorf("%w: a stream needs a room or the notifications", ErrInvalid)
	}
	for _, r := range spec.Rooms {
		if r <= 0 {
			return nil, fmt.Errorf("%w: roomId must be a positive integer", ErrInvalid)
		}
	}
	if !spec.Page && len(spec.Rooms)+btoi(spec.Log) != 1 {
		return nil, fmt.Errorf("%w: only a page stream has several members", ErrInvalid)
	}
	s := &Stream{h: h, User: spec.User, conn: newConn(), grant: spec.Grant, page: spec.Page}
	if !spec.Expires.IsZero() {
		s.expires = spec.Expires.UnixNano()
	}
	for _, r := range spec.Rooms {
		s.members = append(s.members, &member{s: s, topicID: r, roomID: r})
	}
	if spec.Log {
		s.members = append(s.members, &member{s: s, topicID: UserTopic(spec.User)})
	}
	if spec.Resume != "" {
		if err := s.resumeFrom(spec.Resume); err != nil {
			return nil, err
		}
	}
	now := time.Now()
	s.lastWrite.Store(now.UnixNano())
	s.nextRecheck = now.Add(h.RecheckEvery()).UnixNano()
	for _, m := range s.members {
		h.subscribe(m)
	}
	h.streams.add(s)
	h.metrics.StreamsOpened.Inc()
	if h.stopping() { // opened while the instance stops: EndStreams may not have seen it
		s.endForShutdown()
	}
	return s, nil
}

// resumeFrom places the members the resume point names, to be caught up.
func (s *Stream) resumeFrom(resume string) error {
	if !s.page {
		id, err := ParsePosition(resume)
		if err != nil {
			return fmt.Errorf("%w: Last-Event-ID is not a stream id", ErrInvalid)
		}
		m := s.members[0]
		m.pos, m.placed, m.catchUp, m.resumed = Position{ID: id}, true, true, true
		return nil
	}
	ids, err := ParsePageID(resume)
	if err != nil {
		return err
	}
	for _, m := range s.members {
		if id, ok := ids[m.roomID]; ok {
			m.pos, m.placed, m.catchUp, m.resumed = Position{ID: id}, true, true, true
		}
	}
	return nil
}

// WaitReady waits until every member's topic knows its position in history
// (one Redis read for a topic new here) and, with PUBSUB_MODE=channels, is
// subscribed (one round trip), or ctx ends. Every event published after it
// returns reaches the stream, and counts this hub in its deliveredTo.
func (s *Stream) WaitReady(ctx context.Context) {
	for _, m := range s.members {
		for _, c := range []chan struct{}{m.topic.ready, m.topic.carried} {
			if c == nil {
				continue
			}
			select {
			case <-c:
			case <-ctx.Done():
				return
			}
		}
	}
}

// Join counts the stream against the user's connection cap (evicting their
// oldest beyond it), loads the user's mutes and makes the user present in each
// room, the instance's lease taken first if the clock has not yet. Redis
// errors are logged, not fatal: events matter more, and the clock joins a
// stream whose user is missing again. What the stream's release may have
// undone before Join wrote it (it has no expiry) is undone again.
func (s *Stream) Join(ctx context.Context) {
	s.h.takeLease(ctx)
	if err := s.h.registerConn(ctx, s.User, s.connID()); err != nil {
		s.h.log.Warn("registering stream for the connection cap", "user", s.User, "err", err)
	} else if s.ended() {
		s.h.undo(ctx, func(ctx context.Context) { s.h.unregisterConn(ctx, s.User, s.connID()) })
	}
	if len(s.rooms()) == 0 {
		return
	}
	if s.h.mutes != nil {
		ms := s.h.mutes.Acquire(ctx, s.User)
		s.mu.Lock()
		s.mutes = ms
		s.mu.Unlock()
	}
	s.h.joinStreams(ctx, []*Stream{s}, nil)
}

// connID is the stream's name in Redis (its members in presence and the
// user's registry).
func (s *Stream) connID() string { return s.h.connID(s.conn) }

// rooms returns the stream's rooms.
func (s *Stream) rooms() []int64 {
	var out []int64
	for _, m := range s.members {
		if m.roomID > 0 {
			out = append(out, m.roomID)
		}
	}
	return out
}

// Done is closed when the stream has ended. It is made on the first call:
// most streams are never waited on, and hold none.
func (s *Stream) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(chan struct{})
		if s.closed {
			close(s.done)
		}
	}
	return s.done
}

// ended says whether the stream has ended.
func (s *Stream) ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Start hands over a wire that can write without blocking (TryWrite): from
// now on the fan-out writes to it directly, and a worker runs only while the
// stream has queued work. The client's bytes so far (headers, retry:) must
// have been written.
func (s *Stream) Start(w Wire) {
	s.mu.Lock()
	s.wire, s.inline, s.started = w, true, true
	closed := s.closed
	if !closed {
		s.kickLocked()
	}
	s.mu.Unlock()
	if closed {
		_ = w.Close()
	}
}

// Serve drives a wire that can only block (HTTP/2, TLS) from the caller's
// goroutine until the stream ends; ctx ending means the client left.
func (s *Stream) Serve(ctx context.Context, w Wire) {
	s.mu.Lock()
	s.wire, s.started, s.wake = w, true, make(chan struct{}, 1)
	s.mu.Unlock()
	done := s.Done()
	for {
		for s.round() {
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			s.Close()
		case <-done:
			return
		}
	}
}

// place gives m the topic's position, from which live events follow, unless
// it has one (a resume point).
func (s *Stream) place(m *member, p Position) {
	s.mu.Lock()
	if !m.placed {
		m.pos, m.placed = p, true
	}
	s.mu.Unlock()
}
