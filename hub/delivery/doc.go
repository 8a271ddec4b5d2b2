// Package delivery reaches people beyond the tab: for each recipient of a
// publish and each channel a rule selects (push, email, …), it decides
// whether and when to reach them, hands each delivery off — to the
// backend's gateway over HTTP, or to a channel the hub sends itself (a
// Sender: Web Push, FCM, APNs, in package push) — and keeps the fate of
// every hand-off.
//
// The schedule is written with the inbox item, in the same script
// (lua/inbox_add.lua includes this package's lua/delivery_schedule.lua and
// passes it ScheduleKeys and Plan.ScheduleArgs), so a retried publish never
// schedules twice and the outbox sweep finishes what a dying instance left.
// Due work lives in Redis: each user's records and due set, and an index of
// when users have something due (deliveries_due:{ddN}, sharded). Every
// instance polls the index and claims a user's due deliveries with a lease
// (lua/delivery_claim.lua): canceled when the item was seen or read, the
// channel disabled or the type muted; skipped when the user is online, over
// a cap or deduplicated; deferred out of quiet hours; the rest handed off,
// and the outcome recorded (lua/delivery_end.lua). A lease that runs out
// (its instance died) makes the hand-off due again, with the same
// Idempotency-Key.
//
// # Inbox and delivery: one direction
//
// Package inbox calls this one (Plan, Index, CountScheduled at a publish);
// this package never imports inbox. Its claim reads an item's state (was it
// seen, read, archived or deleted before the hand-off fell due) and its JSON
// through the inbox's own reader library, lua/inbox_item.lua, on the keys
// package inbox's ItemKeys gives (New takes that function): a script
// boundary each side owns its half of.
//
// # Goroutines
//
// All run under the core's owner (Hub.Go) and stop with its Close: the
// poller, one job per user being handed off (at most Concurrency at once),
// and the backlog gauge's refresh.
//
// # Index invariant
//
// A user's due set is written before the index entry that points at it, and
// an index entry is removed only after a claim has read the user's due set
// and put in an entry for the next due time. A writer that dies in between
// is covered: the publish by the outbox sweep, a hand-off by the entry its
// claim put in at the lease's end.
package delivery
