package hub

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
)

// How a stream ends: a last frame (lagged, evicted, shutdown), the end
// itself, and the release of what Open and Join took.

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
		wait := rand.N(spread)
		if s.h.Go(func(ctx context.Context) {
			if Sleep(ctx, wait) {
				s.finish(frame)
			}
		}) {
			return
		}
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
	if s.done != nil {
		close(s.done)
	}
	h := s.h
	h.streams.releasing.Add(1)
	if !h.Go(s.release) {
		// Opened after Close: its context is cancelled, so the release frees
		// what is local at once and Redis forgets the rest by its TTLs.
		go s.release(h.ctx)
	}
}

// release undoes Open and Join.
func (s *Stream) release(ctx context.Context) {
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
	defer s.h.streams.releasing.Add(-1)
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	if ms != nil {
		h.mutes.Release(s.User)
	}
	s.leaveRooms(ctx)
	h.unregisterConn(ctx, s.User, s.connID())
}

// leaveRooms takes the stream's member out of its rooms' presence; a user
// left with none leaves.
func (s *Stream) leaveRooms(ctx context.Context) {
	id := s.connID()
	for _, room := range s.rooms() {
		if _, err := s.h.leave(ctx, room, id, []string{itoa(s.User)}, ""); err != nil {
			s.h.log.Warn("leaving presence", "room", room, "user", s.User, "err", err)
		}
	}
}
