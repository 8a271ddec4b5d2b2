package hub

import (
	"context"
	"net"
	"time"
)

// How a stream writes: the fan-out's offer, the queue and its worker, the
// frames, the catch-up from history.

// offer hands a live event of member m to the stream, from the topic's
// fan-out (under the room's lock). It never blocks: it writes to an idle
// socket at once, else queues. It reports false when the event was dropped.
// sc is the fan-out's buffers for the write.
func (s *Stream) offer(m *member, ev *Event, sc *writeScratch) bool {
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
	bufs, ok := s.frameLocked(m, ev, sc.bufs[:0], sc)
	if !ok {
		if m.catchUp {
			s.kickLocked()
		}
		return true
	}
	s.tryWriteLocked(bufs)
	sc.bufs = [2][]byte{} // keep no event alive
	return true
}

// writeScratch is the buffers of the fan-out's inline writes, one per topic
// (used under its lock): an idle stream carries none.
type writeScratch struct {
	bufs [2][]byte
	id   []byte // a page stream's id line
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
				m.pos, m.placed = justBefore(ev), true
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
		if !s.h.Go(func(context.Context) {
			for s.round() {
			}
		}) {
			s.working = false
			s.endLocked() // opened after Close: nothing may write for it
		}
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
				bufs, _ = s.frameLocked(q.m, q.ev, bufs, nil)
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
// seq jump (m then catches up from history, this event included). With sc,
// the bytes are written before the next call (a page stream's id line may
// be built in sc).
func (s *Stream) frameLocked(m *member, ev *Event, bufs net.Buffers, sc *writeScratch) (net.Buffers, bool) {
	if !ev.HasID() {
		if ev.Type == GapEventType {
			m.pos.forget() // the room announced a gap: the next seq starts afresh
		}
		return s.appendFrame(bufs, m, ev, sc), true
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
			bufs = s.appendFrame(bufs, m, newGap(m.pos.ID, ev.ID), sc)
		}
	}
	m.pos.Advance(ev)
	m.placed = true
	if s.muted(m, ev) {
		return bufs, false
	}
	return s.appendFrame(bufs, m, ev, sc), true
}

// appendFrame appends the bytes of ev for this stream to bufs: the shared
// frame, or for a page stream the stream's own id line followed by the
// shared page frame. Call it after m's position moved past ev. The id line
// changes with every event: with sc it is built in sc's buffer, else in a
// new one.
func (s *Stream) appendFrame(bufs net.Buffers, m *member, ev *Event, sc *writeScratch) net.Buffers {
	switch {
	case !s.page:
		return append(bufs, ev.frame)
	case !ev.HasID():
		return append(bufs, ev.pageFrame(m.roomID))
	case sc != nil:
		sc.id = s.appendIDLine(sc.id[:0])
		return append(bufs, sc.id, ev.pageFrame(m.roomID))
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

// catchUp sends m's history after its position, page by page, in order (a
// system.gap first when history no longer reaches back to it).
func (s *Stream) catchUp(m *member) error {
	ctx, cancel := context.WithCancel(s.h.ctx)
	defer cancel()
	stop := context.AfterFunc(ctxOf(s.Done()), cancel)
	defer stop()
	s.mu.Lock()
	c := s.h.newCursor(m.topicID, m.pos, m.resumed, catchUpRetryFor)
	m.resumed = false
	s.mu.Unlock()
	for {
		page, err := c.next(ctx, historyPage, historyPageBytes)
		if err != nil {
			return err
		}
		s.mu.Lock()
		var bufs net.Buffers
		if page.gap != nil {
			m.pos.forget()
			bufs = s.appendFrame(bufs, m, page.gap, nil)
		}
		for _, ev := range page.events {
			m.pos.Advance(ev) // a page stream's id line tells where every member stands
			if !s.muted(m, ev) {
				bufs = s.appendFrame(bufs, m, ev, nil)
			}
		}
		m.pos = c.pos // the seq the cursor learned
		s.mu.Unlock()
		if len(bufs) > 0 {
			if err := s.write(bufs, true); err != nil {
				return err
			}
		}
		if !page.more {
			return nil
		}
	}
}
