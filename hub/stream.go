package hub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrLagged ends a stream whose client cannot keep up: events were dropped for
// it while its socket would not take bytes (a write blocked for SlowWrite).
// Drops alone (a burst, a replay, a busy hub) only make the stream catch up
// from history.
var ErrLagged = errors.New("client lagged")

// catchUpRetryFor is how long a catch-up keeps retrying while Redis is away
// before the stream ends (the browser then resumes from its last id).
const catchUpRetryFor = 30 * time.Second

// Stream is one client's stream of a room or of a user's notifications: a
// live subscription to the topic plus the client's position, so that replay
// and live join with no gap and no duplicate.
type Stream struct {
	*Subscriber
	h         *Hub
	closeOnce sync.Once
	Room      int64    // the room; 0 for a user stream
	topic     int64    // the room, or userTopic(user)
	mutes     *muteSet // the user's muted types (room streams), set by Join
	lastID    StreamID // last event id sent to the client
	lastSeq   int64    // its seq; 0 when unknown
	resume    bool     // history after lastID must be sent before live events
	hasPos    bool     // lastID is a position (a resume point or an event sent)
}

// OpenStream subscribes to room first, so that nothing published from now on
// is missed, and remembers the resume point (Last-Event-ID): "" means live
// only, "0" everything retained. It does not touch Redis, so the caller can
// answer at once; it then calls Join, and CatchUp.
func (h *Hub) OpenStream(room, user int64, resume string) (*Stream, error) {
	if room <= 0 {
		return nil, fmt.Errorf("%w: roomId must be a positive integer", ErrInvalid)
	}
	return h.openTopic(room, room, user, resume)
}

// OpenUserStream is OpenStream for the user's own notifications: it follows
// the user's log (notification.created and notification.read).
func (h *Hub) OpenUserStream(user int64, resume string) (*Stream, error) {
	return h.openTopic(0, userTopic(user), user, resume)
}

func (h *Hub) openTopic(room, topic, user int64, resume string) (*Stream, error) {
	s := &Stream{h: h, Room: room, topic: topic}
	if resume != "" {
		id, err := ParsePosition(resume)
		if err != nil {
			return nil, fmt.Errorf("%w: Last-Event-ID is not a stream id", ErrInvalid)
		}
		s.lastID, s.resume, s.hasPos = id, true, true
	}
	s.Subscriber = h.subscribe(topic, user, newID())
	return s, nil
}

// WaitReady waits until the stream's room knows its position in history (one
// Redis read when the room is new), or ctx ends. Every event published after
// it returns reaches the stream, even on a Redis Cluster where the room's
// subscription is confirmed later: the room replays from that position.
func (s *Stream) WaitReady(ctx context.Context) {
	select {
	case <-s.room.ready:
	case <-ctx.Done():
	}
}

// Join counts the stream against the user's connection cap (evicting their
// oldest beyond it) and makes the user present in the room. Redis errors are
// logged, not fatal: events matter more, and Refresh tries presence again.
// ctx bounds the time; a client disconnecting does not abandon the writes.
func (s *Stream) Join(ctx context.Context) {
	if err := s.h.registerConn(ctx, s.User, s.ConnID); err != nil {
		s.h.log.Warn("registering stream for the connection cap", "user", s.User, "err", err)
	}
	if s.Room == 0 {
		return
	}
	s.mutes = s.h.acquireMutes(ctx, s.User)
	if err := s.h.touch(ctx, s.Room, s.User, s.ConnID); err != nil {
		s.h.log.Warn("joining presence", "room", s.Room, "user", s.User, "err", err)
	}
}

// Close unsubscribes and, once the stream's presence is gone, lets the user
// leave the room if it was their last stream there. Safe to call more than once.
func (s *Stream) Close() {
	s.closeOnce.Do(func() {
		s.h.unsubscribe(s.Subscriber)
		ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
		defer cancel()
		if s.mutes != nil {
			s.h.releaseMutes(s.User)
		}
		if s.Room == 0 {
			s.h.unregisterConn(ctx, s.User, s.ConnID)
			return
		}
		if _, err := s.h.leave(ctx, s.Room, s.ConnID, []string{itoa(s.User)}); err != nil {
			s.h.log.Warn("leaving presence", "room", s.Room, "user", s.User, "err", err)
		}
		s.h.unregisterConn(ctx, s.User, s.ConnID)
	})
}

// Refresh keeps the stream's user present; call it every RefreshEvery.
func (s *Stream) Refresh(ctx context.Context) {
	if s.Room == 0 {
		return
	}
	if err := s.h.touch(ctx, s.Room, s.User, s.ConnID); err != nil {
		s.h.log.Warn("refreshing presence", "room", s.Room, "user", s.User, "err", err)
	}
}

// RefreshEvery is how often an open stream refreshes its presence: well within
// PRESENCE_USER_TTL_SECS, so an open tab never drops out.
func (h *Hub) RefreshEvery() time.Duration { return max(h.cfg.PresenceUserTTL/3, 100*time.Millisecond) }

// CatchUp sends, through write, every retained event after the stream's
// position, in order (a system.gap first when history no longer reaches back
// to it). It runs after OpenStream with a resume point, and again whenever
// events were dropped for this stream (Behind, or a seq jump seen by Accept).
// Live events dropped meanwhile are re-read from history: it makes passes
// until one ends with nothing dropped, or write fails. It returns at once when
// there is nothing to catch up.
func (s *Stream) CatchUp(ctx context.Context, write func(*Event) error) error {
	for s.resume || s.IsBehind() {
		first := s.clearBehind()
		s.resume = false
		if !s.hasPos {
			if first.IsZero() {
				continue // nothing was dropped before the first event
			}
			// Nothing sent yet: re-read from the first event dropped.
			s.lastID, s.hasPos = first.prev(), true
			page, err := s.read(ctx, func(ctx context.Context) ([]*Event, error) {
				return s.h.readFrom(ctx, s.topic, first, historyPage)
			})
			if err == nil {
				err = s.sendPages(ctx, page, write)
			}
			if err != nil {
				return err
			}
			continue
		}
		if err := s.replay(ctx, write); err != nil {
			return err
		}
	}
	return nil
}

// replay sends history from lastID to the end, page by page.
func (s *Stream) replay(ctx context.Context, write func(*Event) error) error {
	page, err := s.read(ctx, func(ctx context.Context) ([]*Event, error) {
		return s.h.readFrom(ctx, s.topic, s.lastID, historyPage)
	})
	if err != nil {
		return err
	}
	if !s.lastID.IsZero() {
		if len(page) > 0 && page[0].ID == s.lastID {
			s.lastSeq = page[0].Seq
		} else if err := s.checkGap(ctx, page, write); err != nil {
			return err
		}
	}
	return s.sendPages(ctx, page, write)
}

// sendPages sends page and the pages after it, skipping what was already sent.
func (s *Stream) sendPages(ctx context.Context, page []*Event, write func(*Event) error) error {
	var err error
	for {
		for _, ev := range page {
			if s.lastID.Less(ev.ID) {
				if !s.muted(ev) {
					if err := write(ev); err != nil {
						return err
					}
				}
				s.lastID, s.lastSeq = ev.ID, ev.Seq
			}
		}
		if len(page) < historyPage {
			return nil
		}
		from := page[len(page)-1].ID
		if page, err = s.read(ctx, func(ctx context.Context) ([]*Event, error) {
			return s.h.readAfter(ctx, s.topic, from, historyPage)
		}); err != nil {
			return err
		}
	}
}

// checkGap sends system.gap when the resume point is not in history and is
// older than everything retained (trimmed), or when history is empty though the
// client has seen an event (Redis lost its data).
func (s *Stream) checkGap(ctx context.Context, page []*Event, write func(*Event) error) error {
	var oldest StreamID
	if len(page) > 0 {
		old, err := s.read(ctx, func(ctx context.Context) ([]*Event, error) {
			o, err := s.h.oldest(ctx, s.topic)
			if o == nil {
				return nil, err
			}
			return []*Event{o}, nil
		})
		if err != nil {
			return err
		}
		if len(old) == 0 || old[0].ID != page[0].ID {
			return nil // the resume point lies inside history: nothing was lost
		}
		oldest = page[0].ID
	}
	s.lastSeq = 0
	return write(newGap(s.lastID, oldest))
}

// read runs one history read, retrying with backoff while Redis is away, for
// at most catchUpRetryFor: a catch-up is never silently skipped.
func (s *Stream) read(ctx context.Context, f func(context.Context) ([]*Event, error)) ([]*Event, error) {
	deadline := time.Now().Add(catchUpRetryFor)
	bo := newBackoff()
	for {
		page, err := f(ctx)
		if err == nil {
			return page, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, err
		}
		s.h.log.Warn("catch-up read failed; retrying", "topic", s.topic, "err", err)
		if !bo.wait(ctx) {
			return nil, ctx.Err()
		}
	}
}

// Accept decides what to do with a live event: send it, drop it (already sent),
// or, when its seq shows that events are missing, catch up first (CatchUp
// then re-reads history, this event included).
func (s *Stream) Accept(ev *Event) (send, catchUp bool) {
	if !ev.HasID() {
		if ev.Type == GapEventType {
			s.lastSeq = 0 // the room announced a gap: the next seq starts afresh
		}
		return true, false
	}
	if !s.lastID.Less(ev.ID) {
		return false, false
	}
	if s.lastSeq > 0 && ev.Seq > s.lastSeq+1 {
		s.resume = true
		return false, true
	}
	s.lastID, s.lastSeq, s.hasPos = ev.ID, ev.Seq, true
	return !s.muted(ev), false
}

// muted reports whether the stream's user muted ev's type: it is then not
// written, though the stream's position moves past it.
func (s *Stream) muted(ev *Event) bool { return s.mutes != nil && s.mutes.has(ev.Type) }
