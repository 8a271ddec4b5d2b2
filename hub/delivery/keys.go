package delivery

import (
	"strconv"

	"roomhub/hub"
)

// Redis key names of delivery, all in one place (the core's are in
// hub/keys.go). A user's keys carry hub.UserTag, so a script may touch them
// together.

// RecordsKey holds a user's deliveries beyond the tab, "<notificationId>|<channel>"
// → the record (JSON, see lua/delivery_schedule.lua), besides "digest|<channel>"
// (the open digest's send time) and "hol|<channel>" (the retrying head of
// the channel's queue): "delivery:{7}".
func RecordsKey(user int64) string { return "delivery:" + hub.UserTag(user) }

// DueKey orders a user's pending deliveries by due time (ms); one
// being handed off is scored by its lease's end: "delivery:due:{7}".
func DueKey(user int64) string { return "delivery:due:" + hub.UserTag(user) }

// DoneKey lists a user's finished deliveries by when (ms), so that
// they are dropped DELIVERY_RECORD_DAYS later: "delivery:done:{7}".
func DoneKey(user int64) string { return "delivery:done:" + hub.UserTag(user) }

// SentPrefix starts a user's per-channel hand-off log, the caps'
// sliding windows: "delivery:sent:{7}:push" (a zset, first record id →
// when, ms).
func SentPrefix(user int64) string { return "delivery:sent:" + hub.UserTag(user) + ":" }

// DedupePrefix starts a user's dedupe keys, each held by the record
// that went out under it for its window: "delivery:dedupe:{7}:push:<key>".
func DedupePrefix(user int64) string { return "delivery:dedupe:" + hub.UserTag(user) + ":" }

// ChannelSettingsKey holds a user's delivery preferences: "<channel>" →
// {"enabled","mutedEventTypes"} and "quiet" → {"start","end","timeZone"}:
// "settings:channels:{7}".
func ChannelSettingsKey(user int64) string { return "settings:channels:" + hub.UserTag(user) }

// Shards is how many index keys list due deliveries (and dead
// ones); their hash tags spread them over a cluster's masters.
const Shards = 16

// DueIndexKey lists when users have deliveries falling due, one
// member per reason to look ("<user>:<ms>:<tag>", scored in ms):
// "deliveries_due:{dd3}".
func DueIndexKey(shard int) string { return "deliveries_due:{dd" + strconv.Itoa(shard) + "}" }

// DeadIndexKey lists dead deliveries, "<user>|<notificationId>|<channel>"
// scored by when they died (ms): "deliveries_dead:{dx3}".
func DeadIndexKey(shard int) string { return "deliveries_dead:{dx" + strconv.Itoa(shard) + "}" }

// NotificationKey lists the deliveries of one notification,
// "<user>|<channel>": "deliveries:{42}:1708070400000-0".
func NotificationKey(room int64, streamID string) string {
	return "deliveries:" + hub.RoomTag(room) + ":" + streamID
}
