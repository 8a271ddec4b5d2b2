// Package hub is roomhub's domain, with no HTTP in it: local rooms and their
// subscribers, the pub/sub listener that feeds them, room history, presence,
// the inbox with its write-behind flusher, room access, locks and the Redis
// key names. Redis is the only shared state, so any number of hubs may run
// side by side on one Redis or one Redis Cluster.
//
// A stream follows a topic: a room, or a user's notification log (topic < 0,
// the user id negated). Both are a history stream with a seq counter and a
// live channel, so rooms.go, repair.go and stream.go serve them alike: a room
// stream and the user stream differ only in what they join (presence, mutes).
//
// Lock order: rooms.mu before room.mu; a subscriber's mu is taken alone (the
// fan-out takes it under room.mu on the rare overflow path). No Redis call is
// made while a lock is held.
package hub
