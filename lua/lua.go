// Package lua embeds the Redis Lua scripts of roomhub. Each script starts with
// a header comment listing its KEYS and ARGV.
package lua

import _ "embed"

// LockAcquire takes a lock if nobody holds it (SET NX EX with an owner).
//
//go:embed lock_acquire.lua
var LockAcquire string

// LockRelease deletes a lock only if the caller still owns it.
//
//go:embed lock_release.lua
var LockRelease string

// Publish atomically checks idempotency, numbers, stores and publishes one event.
//
//go:embed publish.lua
var Publish string

// PresenceTouch marks a user present through one member (stream or heartbeat).
//
//go:embed presence_touch.lua
var PresenceTouch string

// PresenceLeave removes members and reports the users left with none.
//
//go:embed presence_leave.lua
var PresenceLeave string

// UserConns registers a stream and evicts the user's oldest beyond the cap.
//
//go:embed user_conns.lua
var UserConns string
