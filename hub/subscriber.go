package hub

import (
	"sync"
	"sync/atomic"
)

// Subscriber is one stream's subscription to a room. The room never blocks on
// it: when its buffer is full the event is dropped and the subscriber is
// behind, and its stream re-reads history (which holds every event with an id)
// from the last event it sent. A full buffer alone never cuts a client: that
// happens only when its socket will not take bytes (see ErrLagged).
type Subscriber struct {
	room   *room
	User   int64
	ConnID string

	ch       chan *Event
	behind   atomic.Bool
	behindCh chan struct{} // a token when behind becomes true
	evict    chan struct{} // closed when the stream must end (evicted)
	once     sync.Once

	mu     sync.Mutex // guards missed, and the behind flag together with its signal
	missed StreamID   // first id not handed over since the last clearBehind
}

// Events delivers the room's live events.
func (s *Subscriber) Events() <-chan *Event { return s.ch }

// Behind signals that events were dropped for this stream: catch up from history.
func (s *Subscriber) Behind() <-chan struct{} { return s.behindCh }

// IsBehind reports whether events were dropped since the last catch-up began.
func (s *Subscriber) IsBehind() bool { return s.behind.Load() }

// Evicted is closed when this stream has been evicted (per-user connection cap).
func (s *Subscriber) Evicted() <-chan struct{} { return s.evict }

// send hands ev over without blocking and reports whether it was. An event
// that finds the buffer full is dropped and the subscriber is behind; history
// holds the events with an id, so a subscriber that is behind gets no more of
// them until its stream has caught up.
func (s *Subscriber) send(ev *Event) bool {
	if s.behind.Load() && ev.HasID() {
		return true // it will read this from history
	}
	select {
	case s.ch <- ev:
		return true
	default:
	}
	// The overflow path is rare: the lock keeps the flag and its signal
	// together, so clearBehind never leaves a signal without its flag.
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.HasID() && s.missed.IsZero() {
		s.missed = ev.ID
	}
	if !s.behind.Load() {
		s.behind.Store(true)
		select {
		case s.behindCh <- struct{}{}:
		default:
		}
	}
	return false
}

// clearBehind forgets drops and empties the buffer, before the stream
// re-reads history from its last sent id, which holds everything dropped. It
// returns the oldest id dropped or missed, for a stream that has sent nothing
// yet and so has no id to re-read from.
func (s *Subscriber) clearBehind() StreamID {
	s.mu.Lock()
	s.behind.Store(false)
	select {
	case <-s.behindCh:
	default:
	}
	first := s.missed
	s.missed = StreamID{}
	s.mu.Unlock()
	for {
		select {
		case ev := <-s.ch:
			if ev.HasID() && (first.IsZero() || ev.ID.Less(first)) {
				first = ev.ID
			}
		default:
			return first
		}
	}
}

// evicted ends the stream with system.evicted; it reports whether this call did.
func (s *Subscriber) evicted() bool {
	done := false
	s.once.Do(func() { close(s.evict); done = true })
	return done
}
