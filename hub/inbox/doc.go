// Package inbox is notifications for people, built on the realtime core
// (package hub): a publish with recipients puts the event into each
// recipient's inbox exactly once, the inbox is listed, counted and read,
// each user's muted event types are kept, and reads are flushed to the
// backend in batches (write-behind).
//
// It owns its configuration (config.go) and the keys of its keys.go: the
// per-user keys from inbox:{7} to settings:muted:{7}, the timers' index
// (inbox_timers:*) and the read index (read_pending:*); it sweeps the core's
// outbox (outbox:rooms).
// It keeps each user's notification log (a topic of the core, so user and
// page streams carry it), writes it from inside its Lua scripts and reads
// it back for the core (ReadLog, hub.UserLogs). The core knows nothing of
// inboxes: it keeps a publish's recipients in the room's outbox as an
// opaque note, and asks Mutes which event types a user's streams leave out.
//
// # What a person costs
//
// A new inbox is small, three keys (inbox:{7}, inbox:counts:{7},
// unread_count:{7}) holding its items, order, counts and log, and grows
// large (inbox:order, inbox:log) past 48 items; an event's body is kept
// once for all its recipients (BodyPrefix). Both, which older hubs cannot
// read, are written only once every live instance reads them
// (hub.FleetVersion). The Lua says how: lua/inbox_lib.lua's SMALL.
//
// # Inbox and delivery: one direction
//
// The inbox calls delivery, never the other way: a publish plans its
// recipients' deliveries (delivery.Plan) and writes them with the items in
// one script (lua/inbox_add.lua), then indexes and counts them
// (Delivery.Index, CountScheduled); the records' Lua is delivery's
// (lua/delivery_schedule.lua, with its keys and arguments from
// delivery.ScheduleKeys and Plan.ScheduleArgs). Package delivery never
// imports this one. Its claim reads an item's state (seen, read, archived,
// deleted) through this package's reader library, lua/inbox_item.lua, on
// the keys ItemKeys gives: the script boundary.
//
// # Goroutines
//
// All run under the core's owner (Hub.Go) and stop with its Close: the
// write-behind flusher and the outbox sweep (each on one instance at a time,
// under a lock), and a short-lived loader of a user's muted types when
// another instance changed them. Close runs a last flush (Hub.OnClose).
//
// # Locks
//
// mutes.mu alone, never held across a Redis call. Every change of a user's
// inbox is one Lua script, so instances need no lock between them.
package inbox
