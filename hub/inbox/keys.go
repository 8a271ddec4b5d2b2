package inbox

import (
	"strconv"

	"roomhub/hub"
	"roomhub/hub/delivery"
)

// Redis key names of the inbox, all in one place (the core's are in
// hub/keys.go), then the order its scripts take them in. A user's keys carry
// hub.UserTag, so one script may touch them together.

// ItemsKey is a user's inbox hash, notificationId → the notification as the
// inbox lists it (JSON, without readAt): "inbox:{7}".
func ItemsKey(user int64) string { return "inbox:" + hub.UserTag(user) }

// OrderKey orders a user's inbox, notificationId scored by arrival (event
// time in ms × 1024, kept strictly increasing): "inbox:order:{7}".
func OrderKey(user int64) string { return "inbox:order:" + hub.UserTag(user) }

// ReadKey holds a user's read marks, notificationId → readAt: "inbox:read:{7}".
func ReadKey(user int64) string { return "inbox:read:" + hub.UserTag(user) }

// MetaKey holds what counts of an item besides its state,
// notificationId → "severity\ttag,tag\texpiresAt": "inbox:meta:{7}".
func MetaKey(user int64) string { return "inbox:meta:" + hub.UserTag(user) }

// SeenKey holds a user's seen marks, notificationId → seenAt: "inbox:seen:{7}".
func SeenKey(user int64) string { return "inbox:seen:" + hub.UserTag(user) }

// ArchivedKey holds a user's archived items, notificationId → archivedAt:
// "inbox:archived:{7}".
func ArchivedKey(user int64) string { return "inbox:archived:" + hub.UserTag(user) }

// DueKey holds a user's timers, "s:<id>" (snoozed until) and "x:<id>"
// (expires at) scored in ms: "inbox:due:{7}".
func DueKey(user int64) string { return "inbox:due:" + hub.UserTag(user) }

// CountsKey holds a user's exact counts, kept by the inbox scripts:
// "inbox:counts:{7}".
func CountsKey(user int64) string { return "inbox:counts:" + hub.UserTag(user) }

// DeletedKey remembers a user's deleted and expired items, and events
// joined into a group, scored by when (ms), so that a retried publish does
// not bring them back: "inbox:deleted:{7}".
func DeletedKey(user int64) string { return "inbox:deleted:" + hub.UserTag(user) }

// GroupsKey holds a user's groups: "k:<groupKey>" → the open item of
// the key, "g:<notificationId>" → the group's record: "inbox:groups:{7}".
func GroupsKey(user int64) string { return "inbox:groups:" + hub.UserTag(user) }

// TimerShards is how many index keys list the users with inbox timers;
// their hash tags spread them over a cluster's masters.
const TimerShards = 16

// TimersKey lists users with inbox timers (snooze, expiry), user → the
// earliest due time in ms: "inbox_timers:{it3}".
func TimersKey(shard int) string { return "inbox_timers:{it" + strconv.Itoa(shard) + "}" }

// LogKey is a user's log, seq → an entry (lua/inbox_log.lua): the history
// of their user stream: "inbox:log:{7}".
func LogKey(user int64) string { return "inbox:log:" + hub.UserTag(user) }

// oldLogKey and oldSeqKey are where an older hub kept a user's log (a
// stream) and its seq: the log goes on from that seq, and drops them.
func oldLogKey(user int64) string { return "user:log:" + hub.UserTag(user) }
func oldSeqKey(user int64) string { return "user:seq:" + hub.UserTag(user) }

// UnreadCountKey is a user's unread counter: "unread_count:{7}".
func UnreadCountKey(user int64) string { return "unread_count:" + hub.UserTag(user) }

// ReadStatusKey is a user's write-behind buffer, notificationId → readAt: "read_status:{7}".
func ReadStatusKey(user int64) string { return "read_status:" + hub.UserTag(user) }

// ReadDeadKey holds reads the sink refused for good, notificationId → JSON
// {readAt, reason}: "read_dead:{7}".
func ReadDeadKey(user int64) string { return "read_dead:" + hub.UserTag(user) }

// MutedKey is the set of event types a user muted: "settings:muted:{7}".
func MutedKey(user int64) string { return "settings:muted:" + hub.UserTag(user) }

// ReadPendingShards is how many index keys list the users with pending reads;
// their hash tags spread them over a cluster's masters.
const ReadPendingShards = 16

// ReadPendingKey lists users with reads waiting for the flusher, user → a
// counter bumped by every read: "read_pending:{rp3}".
func ReadPendingKey(shard int) string { return "read_pending:{rp" + strconv.Itoa(shard) + "}" }

// BodyPrefix is where an event's body is kept once for all its recipients:
// BodyPrefix + notificationId, "inbox:body:42:1733577000000-0" (a string).
// On a cluster the items hold it (a user's scripts reach their slot alone).
const BodyPrefix = "inbox:body:"

// Items is what delivery's claim takes to read a user's items in its own
// atomic step (lua/inbox_item.lua).
func Items() delivery.Items { return delivery.Items{Keys: ItemKeys, Bodies: BodyPrefix} }

// ItemKeys are the keys of a user's items in the order lua/inbox_item.lua
// takes them: what another script (delivery's claim) passes to read the
// items in its own atomic step.
func ItemKeys(user int64) []string {
	return []string{ItemsKey(user), OrderKey(user), ReadKey(user), MetaKey(user),
		SeenKey(user), ArchivedKey(user), DueKey(user), GroupsKey(user)}
}

// inboxKeys are the keys every inbox script takes: ItemKeys, then those
// lua/inbox_lib.lua lists.
func inboxKeys(user int64) []string {
	return append(ItemKeys(user), UnreadCountKey(user), LogKey(user), oldSeqKey(user),
		ReadStatusKey(user), MutedKey(user), CountsKey(user), DeletedKey(user), oldLogKey(user))
}

// plainKeys are the keys lua/inbox_add_plain.lua takes of a user.
func plainKeys(user int64) []string {
	return []string{ItemsKey(user), CountsKey(user), UnreadCountKey(user), MutedKey(user), DeletedKey(user),
		OrderKey(user), oldSeqKey(user)}
}

// inboxArgs are the arguments every inbox script takes first, then extra.
func (ib *Inbox) inboxArgs(user int64, now string, extra ...string) []string {
	return ib.scriptArgs(hub.UserChannel(user), now, extra...)
}

// scriptArgs are the arguments every inbox script takes first (ARGV[1..8]
// of lua/inbox_lib.lua), then extra: channel is the user's, or "" when the
// script names each recipient's channel itself (inbox_add.lua).
func (ib *Inbox) scriptArgs(channel, now string, extra ...string) []string {
	sharded := "0"
	if ib.rdb.Sharded() {
		sharded = "1"
	}
	return append([]string{itoa(ib.cfg.Retention.Milliseconds()), itoa(int64(ib.cfg.MaxEntries)),
		itoa(int64(ib.cfg.MaxEntries)), channel, sharded, now, BodyPrefix, ib.layout()}, extra...)
}

// layout is the inbox scripts' ARGV[8]: what they may write that older hubs
// cannot read, once every live instance reads it (hub.FleetVersion): a new
// inbox small ("1"), and an event's body kept once for all its recipients
// ("2", not on a cluster: a user's scripts reach their own slot alone, so
// the items hold it there).
func (ib *Inbox) layout() string {
	switch {
	case ib.core.FleetVersion() < 1:
		return ""
	case ib.rdb.Sharded():
		return "1"
	}
	return "2"
}
