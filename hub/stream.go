package hub

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A stream's whole life is in this file; hub/doc.go has the picture.
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
//     position. The worker also runs the resume catch-up.
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
type Stream struct {
	h       *Hub
	User    int64
	ConnID  string
	expires time.Time
	grant   Grant
	page    bool
	members []*member
	mutes   MuteSet // room members' muted types, set by Join; nil: none

	mu         sync.Mutex
	wire       Wire
	inline     bool // the wire can write without blocking (Start)
	started    bool
	working    bool // a worker goroutine owns writing (inline wires)
	queue      []queued
	queueBytes int
	partial    []byte // bytes of a frame the socket took only part of: they go first
	dropped    bool   // events were dropped since the members last caught up
	ending     bool   // a last frame is due: nothing else is written
	final      []byte
	closed     bool
	scratch    [2][]byte     // the inline write's buffers
	idBuf      []byte        // a page stream's id line, for the inline write
	wake       chan struct{} // Serve: work arrived
	done       chan struct{} // closed when the stream ends
	lastWrite  atomic.Int64  // unix nanos of the last write, for keepalives

	// Owned by the clock goroutine.
	nextRefresh, nextRecheck time.Time
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
	s := &Stream{h: h, User: spec.User, ConnID: newID(), expires: spec.Expires, grant: spec.Grant, page: spec.Page,
		done: make(chan struct{})}
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
	s.nextRefresh = now.Add(h.RefreshEvery())
	s.nextRecheck = now.Add(h.RecheckEvery())
	for _, m := range s.members {
		h.subscribe(m)
	}
	h.streams.add(s)
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
// (one Redis read for a topic new here), or ctx ends. Every event published
// after it returns reaches the stream.
func (s *Stream) WaitReady(ctx context.Context) {
	for _, m := range s.members {
		select {
		case <-m.topic.ready:
		case <-ctx.Done():
			return
		}
	}
}

// Join counts the stream against the user's connection cap (evicting their
// oldest beyond it), loads the user's mutes and makes the user present in each
// room. Redis errors are logged, not fatal: events matter more, and the clock
// refreshes presence again.
func (s *Stream) Join(ctx context.Context) {
	if err := s.h.registerConn(ctx, s.User, s.ConnID); err != nil {
		s.h.log.Warn("registering stream for the connection cap", "user", s.User, "err", err)
	}
	rooms := s.rooms()
	if len(rooms) == 0 {
		return
	}
	if s.h.mutes != nil {
		ms := s.h.mutes.Acquire(ctx, s.User)
		s.mu.Lock()
		s.mutes = ms
		s.mu.Unlock()
	}
	s.h.touchMany(ctx, s.User, s.ConnID, rooms)
}

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

// Done is closed when the stream has ended.
func (s *Stream) Done() <-chan struct{} { return s.done }

// ended says whether the stream has ended.
func (s *Stream) ended() bool {
	return isClosed(s.done)
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
	for {
		for s.round() {
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			s.Close()
		case <-s.done:
			return
		}
	}
}

// offer hands a live event of member m to the stream, from the topic's
// fan-out (under the room's lock). It never blocks: it writes to an idle
// socket at once, else queues. It reports false when the event was dropped.
func (s *Stream) offer(m *member, ev *Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed || s.ending:
		return true
	case m.catchUp && ev.HasID():
		return true // the catch-up reads it from history
	case !s.inline || s.working || len(s.queue) > 0 || s.partial != nil:
		return s.enqueueLocked(m, ev)
	}
	bufs, ok := s.frameLocked(m, ev, s.scratch[:0], true)
	if !ok {
		if m.catchUp {
			s.kickLocked()
		}
		return true
	}
	s.tryWriteLocked(bufs)
	s.scratch = [2][]byte{} // keep no event alive
	return true
}

// sendRaw writes frame (a keepalive) when nothing else waits, else queues it.
func (s *Stream) sendRaw(frame []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed || s.ending || !s.started:
	case !s.inline || s.working || len(s.queue) > 0 || s.partial != nil:
		s.queue = append(s.queue, queued{raw: frame})
		s.kickLocked()
	default:
		s.tryWriteLocked(net.Buffers{frame})
	}
}

// tryWriteLocked writes bufs without blocking; what the socket does not take
// goes first to the worker.
func (s *Stream) tryWriteLocked(bufs net.Buffers) {
	total := 0
	for _, b := range bufs {
		total += len(b)
	}
	n, err := s.wire.TryWrite(bufs)
	if err != nil {
		s.h.log.Debug("stream ended", "user", s.User, "err", err)
		s.endLocked()
		return
	}
	s.lastWrite.Store(time.Now().UnixNano())
	if int(n) == total {
		return
	}
	rest := make([]byte, 0, total-int(n))
	for _, b := range bufs {
		if n >= int64(len(b)) {
			n -= int64(len(b))
			continue
		}
		rest = append(rest, b[n:]...)
		n = 0
	}
	s.partial = rest
	s.kickLocked()
}

// enqueueLocked queues ev for the worker, or drops it when the queue is full:
// its member then catches up from history.
func (s *Stream) enqueueLocked(m *member, ev *Event) bool {
	size := len(ev.frame)
	if len(s.queue) >= s.h.cfg.ChannelCapacity || s.queueBytes+size > queueMaxBytes {
		s.dropped = true
		if ev.HasID() {
			if !m.placed { // nothing sent yet: start just before the first drop
				m.pos, m.placed = Position{ID: ev.ID.prev(), Seq: ev.Seq - 1}, true
			}
			m.catchUp = true
		}
		s.kickLocked()
		return false
	}
	s.queue = append(s.queue, queued{m: m, ev: ev})
	s.queueBytes += size
	s.kickLocked()
	return true
}

// kickLocked makes sure a worker will look at the stream.
func (s *Stream) kickLocked() {
	switch {
	case !s.started || s.closed:
	case !s.inline:
		select {
		case s.wake <- struct{}{}:
		default:
		}
	case !s.working:
		s.working = true
		s.h.streams.wg.Add(1)
		go func() {
			defer s.h.streams.wg.Done()
			for s.round() {
			}
		}()
	}
}

// round does one step of the worker's work and reports whether there may be
// more: the rest of a partial frame, the last frame, a member's catch-up, or
// the queue. A failed step ends the stream (or makes its last frame due), and
// the next round sees it. An inline stream's worker ends when there is
// nothing left.
func (s *Stream) round() bool {
	s.mu.Lock()
	if s.closed {
		s.working = false
		s.mu.Unlock()
		return false
	}
	if p := s.partial; p != nil {
		s.partial = nil
		s.mu.Unlock()
		if err := s.write(net.Buffers{p}, true); err != nil {
			s.fail(err)
		}
		return true
	}
	if s.ending {
		f := s.final
		s.mu.Unlock()
		_ = s.write(net.Buffers{f}, false)
		s.end()
		return false
	}
	for _, m := range s.members {
		if m.catchUp {
			m.catchUp = false
			s.mu.Unlock()
			if err := s.catchUp(m); err != nil {
				s.fail(err)
			}
			return true
		}
	}
	if len(s.queue) > 0 {
		items := s.queue
		s.queue, s.queueBytes = nil, 0
		var bufs net.Buffers
		for _, q := range items {
			if q.raw != nil {
				bufs = append(bufs, q.raw)
			} else {
				bufs, _ = s.frameLocked(q.m, q.ev, bufs, false)
			}
		}
		s.mu.Unlock()
		if len(bufs) == 0 {
			return true
		}
		if err := s.write(bufs, true); err != nil {
			s.fail(err)
		}
		return true
	}
	s.dropped = false
	s.working = false
	s.mu.Unlock()
	return false
}

// frameLocked judges ev by m's position and appends its bytes to bufs, or
// reports false when it is not to be written: a duplicate, a muted type, or a
// seq jump (m then catches up from history, this event included). scratch:
// the bytes are written before the next call (a page stream's id line may
// reuse the stream's buffer).
func (s *Stream) frameLocked(m *member, ev *Event, bufs net.Buffers, scratch bool) (net.Buffers, bool) {
	if !ev.HasID() {
		if ev.Type == GapEventType {
			m.pos.forget() // the room announced a gap: the next seq starts afresh
		}
		return s.appendFrame(bufs, m, ev, scratch), true
	}
	if m.placed {
		switch m.pos.Check(ev) {
		case Duplicate:
			return bufs, false
		case Jump:
			m.catchUp = true
			return bufs, false
		case Epoch:
			// The numbering started again (Redis lost its data) and the
			// topic's own system.gap did not reach this stream (it was
			// dropped from a full queue): announce it here.
			bufs = s.appendFrame(bufs, m, newGap(m.pos.ID, ev.ID), scratch)
		}
	}
	m.pos.Advance(ev)
	m.placed = true
	if s.muted(m, ev) {
		return bufs, false
	}
	return s.appendFrame(bufs, m, ev, scratch), true
}

// appendFrame appends the bytes of ev for this stream to bufs: the shared
// frame, or for a page stream the stream's own id line followed by the
// shared page frame. Call it after m's position moved past ev. The id line
// changes with every event: with scratch it is built in the stream's buffer,
// else in a new one.
func (s *Stream) appendFrame(bufs net.Buffers, m *member, ev *Event, scratch bool) net.Buffers {
	switch {
	case !s.page:
		return append(bufs, ev.frame)
	case !ev.HasID():
		return append(bufs, ev.pageFrame(m.roomID))
	case scratch:
		s.idBuf = s.appendIDLine(s.idBuf[:0])
		return append(bufs, s.idBuf, ev.pageFrame(m.roomID))
	}
	return append(bufs, s.appendIDLine(nil), ev.pageFrame(m.roomID))
}

// muted reports whether the stream's user muted ev's type (room events only):
// it is then not written, though the member's position moves past it.
func (s *Stream) muted(m *member, ev *Event) bool {
	return m.roomID > 0 && s.mutes != nil && s.mutes.Has(ev.Type)
}

// write writes bufs from the worker, with the write timeout. lagCheck: a write
// that blocked for SlowWrite while events were being dropped means the client
// cannot keep up (ErrLagged).
func (s *Stream) write(bufs net.Buffers, lagCheck bool) error {
	start := time.Now()
	err := s.wire.Write(bufs, s.h.cfg.WriteTimeout)
	now := time.Now()
	s.lastWrite.Store(now.UnixNano())
	if err != nil {
		s.end()
		return err
	}
	if lagCheck && now.Sub(start) >= s.h.cfg.SlowWrite {
		s.mu.Lock()
		lagged := s.dropped
		s.mu.Unlock()
		if lagged {
			return ErrLagged
		}
	}
	return nil
}

// fail ends the stream after err: with system.lagged when it lagged.
func (s *Stream) fail(err error) {
	if errors.Is(err, ErrLagged) {
		s.finish(SystemFrame(LaggedEventType, map[string]string{"reason": "client too slow; reconnect with Last-Event-ID"}))
		return
	}
	s.h.log.Debug("stream ended", "user", s.User, "err", err)
	s.end()
}

// finish ends the stream with frame, the last thing written.
func (s *Stream) finish(frame []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ending {
		return
	}
	s.ending, s.final = true, frame
	s.queue, s.queueBytes = nil, 0
	s.kickLocked()
}

// evict ends the stream with system.evicted for reason (and the room, on a
// page stream); it reports whether this call did.
func (s *Stream) evict(reason string, room int64) bool {
	s.mu.Lock()
	already := s.closed || s.ending
	s.mu.Unlock()
	if already {
		return false
	}
	data := map[string]any{"reason": reason}
	if s.page && room > 0 {
		data["roomId"] = room
	}
	s.finish(SystemFrame(EvictedEventType, data))
	return true
}

// endForShutdown ends the stream after a random part of ShutdownSpread with a
// retry: of its own between 1× and 2× SSE_RETRY_MS, so that a thousand
// browsers do not reconnect to the other instances in the same millisecond.
func (s *Stream) endForShutdown() {
	retry := s.h.cfg.Retry + rand.N(s.h.cfg.Retry+1)
	frame := []byte("retry: " + strconv.FormatInt(retry.Milliseconds(), 10) + "\n\n")
	if spread := s.h.cfg.ShutdownSpread; spread > 0 {
		time.AfterFunc(rand.N(spread), func() { s.finish(frame) })
		return
	}
	s.finish(frame)
}

// Close ends the stream now: the client left. Safe to call more than once.
func (s *Stream) Close() { s.end() }

func (s *Stream) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLocked()
}

// endLocked marks the stream ended and releases it in the background: the
// members unsubscribe, the wire closes, the user leaves the rooms and the cap.
// It takes no other lock, so the fan-out may call it.
func (s *Stream) endLocked() {
	if s.closed {
		return
	}
	s.closed = true
	s.queue, s.partial = nil, nil
	close(s.done)
	h := s.h
	h.streams.wg.Add(1)
	go func() {
		defer h.streams.wg.Done()
		s.release()
	}()
}

// release undoes Open and Join.
func (s *Stream) release() {
	h := s.h
	for _, m := range s.members {
		h.unsubscribe(m)
	}
	h.streams.remove(s)
	s.mu.Lock()
	w, ms := s.wire, s.mutes
	s.mu.Unlock()
	if w != nil {
		_ = w.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	if ms != nil {
		h.mutes.Release(s.User)
	}
	for _, room := range s.rooms() {
		if _, err := h.leave(ctx, room, s.ConnID, []string{itoa(s.User)}); err != nil {
			h.log.Warn("leaving presence", "room", room, "user", s.User, "err", err)
		}
	}
	h.unregisterConn(ctx, s.User, s.ConnID)
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

// catchUp sends m's history after its position, page by page, in order (a
// system.gap first when history no longer reaches back to it).
func (s *Stream) catchUp(m *member) error {
	ctx, cancel := context.WithCancel(s.h.ctx)
	defer cancel()
	stop := context.AfterFunc(ctxOf(s.done), cancel)
	defer stop()
	s.mu.Lock()
	from, resumed := m.pos.ID, m.resumed
	m.resumed = false
	s.mu.Unlock()
	var page []*Event
	var err error
	if from.IsZero() {
		page, err = s.read(ctx, m, func(ctx context.Context) ([]*Event, error) {
			return s.h.readAfter(ctx, m.topicID, from, historyPage)
		})
	} else {
		// Read from the position itself: finding it tells its seq, and not
		// finding it tells a gap.
		page, err = s.read(ctx, m, func(ctx context.Context) ([]*Event, error) {
			return s.h.readFrom(ctx, m.topicID, from, historyPage)
		})
		if err == nil {
			if len(page) > 0 && page[0].ID == from {
				s.mu.Lock()
				m.pos.Seq = page[0].Seq
				s.mu.Unlock()
			} else if err = s.checkGap(ctx, m, page, resumed); err != nil {
				return err
			}
		}
	}
	if err != nil {
		return err
	}
	for {
		s.mu.Lock()
		var bufs net.Buffers
		for _, ev := range page {
			if m.pos.ID.Less(ev.ID) {
				m.pos.Advance(ev)
				if !s.muted(m, ev) {
					bufs = s.appendFrame(bufs, m, ev, false)
				}
			}
		}
		s.mu.Unlock()
		if len(bufs) > 0 {
			if err := s.write(bufs, true); err != nil {
				return err
			}
		}
		if len(page) < historyPage {
			return nil
		}
		last := page[len(page)-1].ID
		if page, err = s.read(ctx, m, func(ctx context.Context) ([]*Event, error) {
			return s.h.readAfter(ctx, m.topicID, last, historyPage)
		}); err != nil {
			return err
		}
	}
}

// checkGap writes system.gap when m's position is not in history and is older
// than everything retained (trimmed), or when history is empty though the
// client has seen an event (Redis lost its data). A client's resume point
// (resumed) that history lacks is a gap wherever it falls: the client got
// that id from the hub, so Redis lost it (a failover that dropped the old
// master's last writes), and what followed it may be lost too. The hub's
// own positions (just before a dropped event) need not exist.
func (s *Stream) checkGap(ctx context.Context, m *member, page []*Event, resumed bool) error {
	var oldest StreamID
	if len(page) > 0 {
		old, err := s.read(ctx, m, func(ctx context.Context) ([]*Event, error) {
			o, err := s.h.oldest(ctx, m.topicID)
			if o == nil {
				return nil, err
			}
			return []*Event{o}, nil
		})
		if err != nil {
			return err
		}
		inside := len(old) > 0 && old[0].ID != page[0].ID
		if inside && !resumed {
			return nil // the position lies inside history: nothing was lost
		}
		oldest = page[0].ID
		if len(old) > 0 {
			oldest = old[0].ID
		}
	}
	s.mu.Lock()
	gap := newGap(m.pos.ID, oldest)
	m.pos.forget()
	bufs := s.appendFrame(nil, m, gap, false)
	s.mu.Unlock()
	return s.write(bufs, true)
}

// read runs one history read, retrying with backoff while Redis is away, for
// at most catchUpRetryFor: a catch-up is never silently skipped.
func (s *Stream) read(ctx context.Context, m *member, f func(context.Context) ([]*Event, error)) ([]*Event, error) {
	var page []*Event
	err := Retry(ctx, catchUpRetryFor, func(ctx context.Context) (bool, error) {
		var err error
		page, err = f(ctx)
		return false, err
	}, func(err error) { s.h.log.Warn("catch-up read failed; retrying", "topic", m.topicID, "err", err) })
	return page, err
}

// RefreshEvery is how often an open stream refreshes its presence: well within
// PRESENCE_USER_TTL_SECS, so an open tab never drops out.
func (h *Hub) RefreshEvery() time.Duration { return max(h.cfg.PresenceUserTTL/3, 100*time.Millisecond) }
