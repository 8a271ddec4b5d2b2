package hub

// Position is where a reader of one topic stands: the id of the last event it
// has passed and that event's seq (0 when unknown, as after a resume by id).
// Rooms and stream members both keep one and judge every event with Check.
type Position struct {
	ID  StreamID
	Seq int64
}

// Verdict is what a reader does with an event, given its position.
type Verdict int8

const (
	// Deliver: the event is next; pass it on and Advance.
	Deliver Verdict = iota
	// Duplicate: the event is not after the position (already passed).
	Duplicate
	// Jump: the event's seq skips some: events are missing; re-read history
	// from the position (the event is there too) instead of passing it.
	Jump
	// Epoch: a newer id with a seq not above the position's: Redis lost its
	// data and numbering started again. Announce a gap, then deliver.
	Epoch
)

// Check judges ev, which must carry an id.
func (p Position) Check(ev *Event) Verdict {
	switch {
	case !p.ID.Less(ev.ID):
		return Duplicate
	case p.Seq > 0 && ev.Seq > p.Seq+1:
		return Jump
	case p.Seq > 0 && ev.Seq <= p.Seq:
		return Epoch
	}
	return Deliver
}

// Advance moves the position past ev.
func (p *Position) Advance(ev *Event) { p.ID, p.Seq = ev.ID, ev.Seq }

// forget makes the seq unknown: after a gap, the next event's seq starts afresh.
func (p *Position) forget() { p.Seq = 0 }

// justBefore is the position just before ev (an event with an id): a reader
// placed there takes ev next. Its seq is ev's less one, so that a cursor
// checks the next seq from there; 0 (ev opens an epoch) leaves it unknown,
// and the cursor knows that place as the hub's own.
func justBefore(ev *Event) Position { return Position{ID: ev.ID.prev(), Seq: ev.Seq - 1} }
