// Package hub is roomhub's realtime core, with no HTTP server in it: local topics
// and the streams that follow them, the pub/sub listener that feeds them,
// publish and history, presence, the connection cap, room access, locks, the
// Redis wrapper and its own Redis key names. Redis is the only shared state, so
// any number of hubs may run side by side on one Redis or one Redis Cluster.
//
// Notifications for people live in hub/inbox, built on this package: the
// core knows nothing of inboxes, deliveries, push or ingest, and holds no
// key or script of theirs; each feature package owns its Config, its keys
// and its Lua. Of their settings the core keeps only RecordTTL
// (DELIVERY_RECORD_DAYS), how long each keeps what finished. It offers what
// they need: the hash tags (UserTag, RoomTag), a user's topic (their
// notification log), Publish with an outbox note, the Redis wrapper (Redis,
// Call, Run), background work under its owner (Go, OnStart, OnClose,
// EveryUnderLock), the control channel (OnControl, Control), and a Mutes
// hook that the fan-out asks.
//
// # HTTP calls out, and only these
//
// The core serves no HTTP (package api adapts it), but it makes the calls
// a hub must make to the backend itself: room access in proxy mode
// (access.go, through backend.go's PostInternal: the internal key, a time
// limit, no redirect followed), and the trace context those calls carry
// (tracing.go, InjectTrace). They live here because the answers are the
// core's own decisions (allow, deny, unreachable), cached and re-checked by
// its clock; the packages built on it make theirs alike (the inbox's read
// sink, delivery's gateway, webpush's push services).
//
// # Topics and streams
//
// A topic is a room, or a user's notification log (topic < 0, the user id
// negated). Both are a history stream with a seq counter and a live channel,
// so topics.go and repair.go serve them alike. A Stream (stream.go,
// stream_write.go, stream_end.go) is one client connection with one member
// per topic it follows: a room stream has one room member, the user stream
// one log member, a page stream several. Each member and each local topic
// keeps a Position (position.go), which judges a live event: deliver,
// duplicate, jump, epoch. History is read through a cursor (cursor.go), which
// owns the rules of a gap (trimmed, lost id, new epoch) and the paged,
// byte-bounded, retried read: a topic's repair, a stream's catch-up and the
// events API call it.
//
// # Goroutines
//
// The Hub owns every goroutine it starts (Go): the listener, its watchdog
// and (PUBSUB_MODE=channels) the sync of its channels with the local
// topics, one subscription per local topic on a cluster, the clock and its
// presence refresh (the instance's lease, instances.go) and figures' write
// (stats.go), the presence sweeper and one broadcaster per room with
// queued transitions, a repair per topic while it repairs, a stream's worker
// while it has work, a stream's release, and what packages built on the core
// start (the inbox's flusher and outbox sweep). Close cancels them all and waits; none outlives it.
//
// # A stream's states
//
//	open ──Start/Serve──▶ idle ◀──────────────▶ working ──▶ ending ──▶ closed
//	                       │  the fan-out writes   │ a worker drains the
//	                       │  to the socket itself │ queue, catches up,
//	                       │  (never blocks)       │ writes the rest of a
//	                       │                       │ partial frame
//	                       └──── client gone, write error, token expiry ──▶ closed
//
// idle: no goroutine exists for the stream. working: one worker goroutine, for
// as long as there is work (an HTTP/2 stream's worker is its handler's
// goroutine, for its whole life). ending: a last frame is due (evicted,
// lagged, shutdown's retry:), then closed. closed: the members are
// unsubscribed and presence and the cap released in the background.
//
// # Locks
//
// Order: topics.mu, then topic.mu, then Stream.mu. The fan-out holds topic.mu
// while it hands an event to each member's stream (offer takes Stream.mu and
// may write to a socket that takes bytes without blocking). Nothing blocks
// under Stream.mu: blocking writes and history reads happen in the worker
// without it. streams.mu and presence.mu are taken alone; a MuteSet is read
// under topic.mu and must not block. No Redis call is made while a lock is
// held.
package hub
