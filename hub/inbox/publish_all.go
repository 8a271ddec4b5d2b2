package inbox

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"roomhub/hub"
)

// ErrSkipped answers an event PublishAll left unpublished, in order, because
// an earlier event of its room failed for want of Redis.
var ErrSkipped = fmt.Errorf("%w: an earlier event of its room could not be published", hub.ErrRedis)

// roomsAtOnce bounds the rooms with recipients PublishAll serves at once.
const roomsAtOnce = 16

// PublishAll publishes reqs, each answered in its place exactly as Publish
// would answer it alone: the one path of a publish, a batch and an ingest
// read. Events to one room go out in their order in reqs. Rooms whose
// events notify no one (Plain) share one pipeline; the others go side by
// side, an event at a time per room. With inOrder, an event that fails for
// want of Redis (not for what it says) leaves its room's later events
// unpublished (ErrSkipped), so that a retry keeps the room's order.
func (ib *Inbox) PublishAll(ctx context.Context, reqs []PublishRequest, inOrder bool) ([]hub.PublishResult, []error) {
	results, errs := make([]hub.PublishResult, len(reqs)), make([]error, len(reqs))
	byRoom := map[int64][]int{}
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
	var plain []PublishRequest
	var plainAt []int
	var others []int64
	for _, room := range rooms {
		if !plainRoom[room] {
			others = append(others, room)
			continue
		}
		for _, i := range byRoom[room] {
			plain, plainAt = append(plain, reqs[i]), append(plainAt, i)
		}
	}
	publishPlain := func() {
		res, perrs := ib.PublishPlain(ctx, plain)
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
				results[i], errs[i] = ib.Publish(ctx, reqs[i])
				failed = inOrder && errs[i] != nil && !Refused(errs[i])
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

// Refused reports whether a publish failed for what it says (a bad field, a
// refused type, a reused idempotency key): sending it again fails again.
// Any other failure is for want of Redis, and a retry may succeed.
func Refused(err error) bool {
	return errors.Is(err, hub.ErrInvalid) || errors.Is(err, hub.ErrBadEventType) || errors.Is(err, hub.ErrIdempotencyReuse)
}
