package hub

import (
	"sync"
	"sync/atomic"
)

// Subscriber is one stream's subscription to a room. The room never blocks on
// it. When its buffer overflows on a live event the subscriber is lagged (the
// client cannot keep up); when it overflows while the room replays history it
// is behind, and the stream re-reads history itself.
type Subscriber struct {
	room   *room
	User   int64
	ConnID string

	ch       chan *Event
	lagged   atomic.Bool
	behind   atomic.Bool
	lagCh    chan struct{} // a token when lagged becomes true
	behindCh chan struct{} // a token when behind becomes true
	evict    chan struct{} // closed when the stream must end (evicted)
	once     sync.Once

	mu     sync.Mutex // guards missed, and each overflow flag together with its signal
	missed StreamID   // first id not handed over since the last clearLag
}

// Events delivers the room's live events.
func (s *Subscriber) Events() <-chan *Event { return s.ch }

// Lagged signals that live events overflowed the buffer: the client is too slow.
func (s *Subscriber) Lagged() <-chan struct{} { return s.lagCh }

// Behind signals that a history replay overflowed the buffer: catch up from history.
func (s *Subscriber) Behind() <-chan struct{} { return s.behindCh }

// Evicted is closed when this stream has been evicted (per-user connection cap).
func (s *Subscriber) Evicted() <-chan struct{} { return s.evict }

// send hands ev over without blocking. An event with an id that finds the
// buffer full is recorded as missed; history holds it, so a subscriber that is
// behind gets no more of them until it has caught up.
func (s *Subscriber) send(ev *Event, replay bool) bool {
	if s.behind.Load() && ev.HasID() {
		return true // it will read this from history
	}
	select {
	case s.ch <- ev:
		return true
	default:
	}
	// The overflow path is rare: the lock keeps each flag and its signal
	// together, so clearLag never leaves a signal without its flag.
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.HasID() && s.missed.IsZero() {
		s.missed = ev.ID
	}
	flag, ch := &s.lagged, s.lagCh
	if replay {
		flag, ch = &s.behind, s.behindCh
	}
	if !flag.Load() {
		flag.Store(true)
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return false
}

// clearLag forgets overflows and drops what is buffered, before the stream
// re-reads history from its last sent id, which holds everything dropped. It
// returns the oldest id dropped or missed, for a stream that has sent nothing
// yet and so has no id to re-read from.
func (s *Subscriber) clearLag() StreamID {
	s.mu.Lock()
	s.lagged.Store(false)
	s.behind.Store(false)
	for _, ch := range []chan struct{}{s.lagCh, s.behindCh} {
		select {
		case <-ch:
		default:
		}
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

// IsLagged reports whether live events overflowed the buffer: outside a
// catch-up, that means the client cannot keep up.
func (s *Subscriber) IsLagged() bool { return s.lagged.Load() }

// overflowed reports whether events were dropped since the last clearLag.
func (s *Subscriber) overflowed() bool { return s.lagged.Load() || s.behind.Load() }

// evicted ends the stream with system.evicted; it reports whether this call did.
func (s *Subscriber) evicted() bool {
	done := false
	s.once.Do(func() { close(s.evict); done = true })
	return done
}
