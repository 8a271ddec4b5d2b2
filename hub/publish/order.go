package publish

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"roomhub/hub"
	"roomhub/hub/inbox"
)

// ErrSkipped answers a body Run left unpublished, in order, because an
// earlier body of its room failed for want of Redis.
var ErrSkipped = fmt.Errorf("%w: an earlier event of its room could not be published", hub.ErrRedis)

// roomsAtOnce bounds the rooms with recipients publishAll serves at once.
const roomsAtOnce = 16

// publishAll publishes reqs, each answered in its place exactly as
// notify would answer it alone. Events to one room go out in their
// order in reqs. Rooms whose events notify no one (Plain) share one
// pipeline of the core's scripts (publishPlain); the others go
// side by side, an event at a time per room (notify: the room's event, its
// recipients' items and their deliveries). With inOrder, an
// event that fails for want of Redis (not for what it says) leaves its
// room's later events unpublished (ErrSkipped), so that a retry keeps the
// room's order.
func (p *Pipeline) publishAll(ctx context.Context, reqs []inbox.PublishRequest, inOrder bool) ([]hub.PublishResult, []error) {
	results, errs := make([]hub.PublishResult, len(reqs)), make([]error, len(reqs))
	plain, plainAt, others, byRoom := split(reqs)
	publishPlain := func() {
		res, perrs := p.publishPlain(ctx, plain)
		for j, i := range plainAt {
			results[i], errs[i] = res[j], perrs[j]
		}
	}
	if len(others) == 0 { // no goroutine for the common case: one pipeline
		if len(plain) > 0 {
			publishPlain()
		}
		return results, errs
	}
	var g errgroup.Group
	g.SetLimit(roomsAtOnce)
	for _, room := range others {
		g.Go(func() error {
			failed := false
			for _, i := range byRoom[room] {
				if failed {
					errs[i] = ErrSkipped
					continue
				}
				results[i], errs[i] = p.notify(ctx, reqs[i])
				failed = inOrder && Outcome{Err: errs[i]}.Failed()
			}
			return nil
		})
	}
	if len(plain) > 0 {
		g.Go(func() error { publishPlain(); return nil })
	}
	_ = g.Wait() // each event's failure is in its place
	return results, errs
}

// split sorts reqs by room: the requests of rooms whose every event is
// plain (with their places in reqs), in order, and the other rooms, in the
// order they first appear, with byRoom their requests' places.
func split(reqs []inbox.PublishRequest) (plain []inbox.PublishRequest, plainAt []int, others []int64, byRoom map[int64][]int) {
	byRoom = map[int64][]int{}
	plainRoom := map[int64]bool{}
	var rooms []int64
	for i, r := range reqs {
		if _, ok := byRoom[r.Room]; !ok {
			rooms = append(rooms, r.Room)
			plainRoom[r.Room] = true
		}
		byRoom[r.Room] = append(byRoom[r.Room], i)
		plainRoom[r.Room] = plainRoom[r.Room] && r.Plain()
	}
	for _, room := range rooms {
		if !plainRoom[room] {
			others = append(others, room)
			continue
		}
		for _, i := range byRoom[room] {
			plain, plainAt = append(plain, reqs[i]), append(plainAt, i)
		}
	}
	return plain, plainAt, others, byRoom
}

// publishPlain publishes plain requests (see inbox.PublishRequest.Plain)
// in one pipeline of the core's scripts, each answered in its place exactly
// as notify would answer it alone.
func (p *Pipeline) publishPlain(ctx context.Context, reqs []inbox.PublishRequest) ([]hub.PublishResult, []error) {
	results, errs := make([]hub.PublishResult, len(reqs)), make([]error, len(reqs))
	ready := make([]hub.PublishRequest, 0, len(reqs))
	at := make([]int, 0, len(reqs))
	for i, req := range reqs {
		c, err := p.core.CheckPublish(req.PublishRequest)
		if err != nil {
			errs[i] = err
			continue
		}
		c.Body = inbox.PlainBody
		ready, at = append(ready, c), append(at, i)
	}
	res, perrs := p.core.PublishMany(ctx, ready)
	for j, i := range at {
		results[i], errs[i] = res[j], perrs[j]
	}
	return results, errs
}

// notify publishes req's event to its room through the core, then starts
// its fan-out to a topic's followers, when it names one, and puts it into
// each direct recipient's inbox. The publish script keeps the recipients in
// the room's outbox together with the event, so inbox writes that a dying
// instance left undone are finished by a retry (same idempotency key) or by
// the outbox sweep.
func (p *Pipeline) notify(ctx context.Context, req inbox.PublishRequest) (hub.PublishResult, error) {
	ctx = hub.WithSpan(ctx, req.Span)
	d, err := p.inbox.Prepare(req)
	if err != nil {
		return hub.PublishResult{}, err
	}
	if !d.Notifies() {
		return p.core.PublishChecked(ctx, d.Core)
	}
	if err := p.inbox.OpenOutbox(ctx, d); err != nil {
		return hub.PublishResult{}, err
	}
	res, err := p.core.PublishChecked(ctx, d.Core)
	if err != nil {
		return res, err
	}
	if res.Duplicate && !res.Pending { // finished: its fan-out, if any, was started
		if res.Fanout, err = p.inbox.FanoutOf(ctx, d, res); err != nil {
			return hub.PublishResult{}, err
		}
		return res, nil
	}
	if res.Fanout, err = p.inbox.Deliver(ctx, d, res); err != nil {
		return hub.PublishResult{}, err
	}
	return res, nil
}
