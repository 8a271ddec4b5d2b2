package hub

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// The core's Redis key and channel names, all in one place; each package
// built on the core keeps its own in its keys.go (hub/inbox, hub/delivery,
// hub/ingest, hub/push, hub/push/webpush). Room and user ids sit in a hash
// tag ({...}) so that one room's (or one user's) keys share a cluster slot
// and a single Lua script may touch them together.

// RoomTag is the hash tag of a room: "{42}". Every package's keys of a room
// carry it.
func RoomTag(room int64) string { return "{" + strconv.FormatInt(room, 10) + "}" }

// UserTag is the hash tag of a user: "{7}". Every package's keys of a user
// carry it, so that one script may touch them together.
func UserTag(user int64) string { return "{" + strconv.FormatInt(user, 10) + "}" }

// RoomChannel is the pub/sub channel of a room's live events: "room:{42}".
func RoomChannel(room int64) string { return "room:" + RoomTag(room) }

// roomChannelPattern matches every room channel, with or without braces.
const roomChannelPattern = "room:*"

// EventsKey is a room's history stream: "room:events:{42}".
func EventsKey(room int64) string { return "room:events:" + RoomTag(room) }

// RoomSeqKey is a room's sequence counter: "room:seq:{42}".
func RoomSeqKey(room int64) string { return "room:seq:" + RoomTag(room) }

// IdempotencyKey holds the first result of a publish: "idem:{42}:<key>".
func IdempotencyKey(room int64, key string) string { return "idem:" + RoomTag(room) + ":" + key }

// PresenceKey is a room's presence hash, userId → last heartbeat: "presence:{42}".
func PresenceKey(room int64) string { return "presence:" + RoomTag(room) }

// PresenceConnsKey holds what keeps one user present in a room: their open
// streams (connection ids, scored +inf: they live while their instance's
// lease does) and "hb" for an explicit heartbeat, scored by its expiry:
// "presence:conns:{42}:7".
func PresenceConnsKey(room, user int64) string {
	return "presence:conns:" + RoomTag(room) + ":" + strconv.FormatInt(user, 10)
}

// PresenceGateKey exists while a room's presence broadcast interval runs:
// "presence:gate:{42}".
func PresenceGateKey(room int64) string { return "presence:gate:" + RoomTag(room) }

// PresenceChangesKey queues a room's presence transitions until the next
// coalesced presence.update: "presence:changes:{42}".
func PresenceChangesKey(room int64) string { return "presence:changes:" + RoomTag(room) }

// PresenceRoomsKey is the set of rooms with presence state, for the sweeper.
// It is one key (one cluster slot) and is only touched by plain commands.
const PresenceRoomsKey = "presence:rooms"

// PresenceInstancesKey is the registry of hub instances, a sorted set of
// instance ids scored by the end of their lease (ms, Redis clock): what an
// open stream's presence and online lease stand on (instances.go).
const PresenceInstancesKey = "presence:instances"

// InstanceStatsKey holds an instance's figures (stats.go), JSON, for three
// StatsEvery: "instance:stats:v1-0123456789abc".
func InstanceStatsKey(id string) string { return "instance:stats:" + id }

// UserConnsKey is a user's open streams across instances, a sorted set of
// connection ids scored by open time (Redis clock): "user:conns:{7}".
func UserConnsKey(user int64) string { return "user:conns:" + UserTag(user) }

// UserOnlineKey is a user's open streams across instances, connection ids
// scored +inf: each counts while its instance's lease lives, so a dead
// instance's streams drop out by themselves. "user:online:{7}".
func UserOnlineKey(user int64) string { return "user:online:" + UserTag(user) }

// UserControlChannel carries orders between instances (control.go): the
// core's evictions and the listener's probes, and what other packages send
// with Hub.Control (the inbox's {"muted":7}).
const UserControlChannel = "hub:control"

// OutboxKey holds a room's notifications whose inbox writes may be unfinished,
// notificationId → "<ms>\n<recipient ids, comma separated>": "outbox:{42}".
func OutboxKey(room int64) string { return "outbox:" + RoomTag(room) }

// OutboxRoomsKey lists rooms that may hold outbox entries, room → last touch
// (ms). It is one key and is only touched by plain commands.
const OutboxRoomsKey = "outbox:rooms"

// A topic is what a stream follows: a room (topic > 0, the room id) or a
// user's notification log (topic < 0, the user id negated). Both have a
// history of events with ids and seqs and a live channel, so rooms, repair
// and catch-up serve them alike: a room's history is its stream
// (EventsKey), a user's log is the inbox's (UserLogs).

// UserTopic is the topic of a user's notification log.
func UserTopic(user int64) int64 { return -user }

// TopicChannel is a topic's live channel: a room's or "user:{7}".
func TopicChannel(topic int64) string {
	if topic < 0 {
		return UserChannel(-topic)
	}
	return RoomChannel(topic)
}

// UserChannel carries a user's notification log live: "user:{7}".
func UserChannel(user int64) string { return "user:" + UserTag(user) }

// userChannelPattern matches every user channel.
const userChannelPattern = "user:*"

// LockKey names a lock: "lock:<name>".
func LockKey(name string) string { return "lock:" + name }

// HashedKey is prefix and the first half of s's SHA-256 in hex: a name
// whose length does not grow with s, and that does not show it.
func HashedKey(prefix, s string) string {
	sum := sha256.Sum256([]byte(s))
	return prefix + hex.EncodeToString(sum[:16])
}

// StreamTicketKey keeps the access token a stream ticket stands for, for
// StreamTicketTTL (a string, deleted when used). The ticket is hashed: a
// reader of the keys cannot use it.
func StreamTicketKey(ticket string) string { return HashedKey("stream:ticket:", ticket) }
