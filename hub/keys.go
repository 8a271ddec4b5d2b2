package hub

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Redis key and channel names, all in one place. Room and user ids sit in a hash
// tag ({...}) so that one room's (or one user's) keys share a cluster slot and a
// single Lua script may touch them together.

// roomTag is the hash tag of a room: "{42}".
func roomTag(room int64) string { return "{" + strconv.FormatInt(room, 10) + "}" }

// userTag is the hash tag of a user: "{7}".
func userTag(user int64) string { return "{" + strconv.FormatInt(user, 10) + "}" }

// RoomChannel is the pub/sub channel of a room's live events: "room:{42}".
func RoomChannel(room int64) string { return "room:" + roomTag(room) }

// roomChannelPattern matches every room channel, with or without braces.
const roomChannelPattern = "room:*"

// EventsKey is a room's history stream: "room:events:{42}".
func EventsKey(room int64) string { return "room:events:" + roomTag(room) }

// RoomSeqKey is a room's sequence counter: "room:seq:{42}".
func RoomSeqKey(room int64) string { return "room:seq:" + roomTag(room) }

// IdempotencyKey holds the first result of a publish: "idem:{42}:<key>".
func IdempotencyKey(room int64, key string) string { return "idem:" + roomTag(room) + ":" + key }

// PresenceKey is a room's presence hash, userId → last heartbeat: "presence:{42}".
func PresenceKey(room int64) string { return "presence:" + roomTag(room) }

// PresenceConnsKey holds what keeps one user present in a room: their open
// streams (connection ids, scored +inf: they live while their instance's
// lease does) and "hb" for an explicit heartbeat, scored by its expiry:
// "presence:conns:{42}:7".
func PresenceConnsKey(room, user int64) string {
	return "presence:conns:" + roomTag(room) + ":" + strconv.FormatInt(user, 10)
}

// PresenceGateKey exists while a room's presence broadcast interval runs:
// "presence:gate:{42}".
func PresenceGateKey(room int64) string { return "presence:gate:" + roomTag(room) }

// PresenceChangesKey queues a room's presence transitions until the next
// coalesced presence.update: "presence:changes:{42}".
func PresenceChangesKey(room int64) string { return "presence:changes:" + roomTag(room) }

// PresenceRoomsKey is the set of rooms with presence state, for the sweeper.
// It is one key (one cluster slot) and is only touched by plain commands.
const PresenceRoomsKey = "presence:rooms"

// PresenceInstancesKey is the registry of hub instances, a sorted set of
// instance ids scored by the end of their lease (ms, Redis clock): what an
// open stream's presence and online lease stand on (instances.go).
const PresenceInstancesKey = "presence:instances"

// UserConnsKey is a user's open streams across instances, a sorted set of
// connection ids scored by open time (Redis clock): "user:conns:{7}".
func UserConnsKey(user int64) string { return "user:conns:" + userTag(user) }

// UserOnlineKey is a user's open streams across instances, connection ids
// scored +inf: each counts while its instance's lease lives, so a dead
// instance's streams drop out by themselves. "user:online:{7}".
func UserOnlineKey(user int64) string { return "user:online:" + userTag(user) }

// UserControlChannel carries orders between instances (control.go): the
// core's evictions and the listener's probes, and what other packages send
// with Hub.Control (the inbox's {"muted":7}).
const UserControlChannel = "hub:control"

// InboxKey is a user's inbox hash, notificationId → the notification as the
// inbox lists it (JSON, without readAt): "inbox:{7}".
func InboxKey(user int64) string { return "inbox:" + userTag(user) }

// InboxOrderKey orders a user's inbox, notificationId scored by arrival (event
// time in ms × 1024, kept strictly increasing): "inbox:order:{7}".
func InboxOrderKey(user int64) string { return "inbox:order:" + userTag(user) }

// InboxReadKey holds a user's read marks, notificationId → readAt: "inbox:read:{7}".
func InboxReadKey(user int64) string { return "inbox:read:" + userTag(user) }

// InboxMetaKey holds what counts of an item besides its state,
// notificationId → "severity\ttag,tag\texpiresAt": "inbox:meta:{7}".
func InboxMetaKey(user int64) string { return "inbox:meta:" + userTag(user) }

// InboxSeenKey holds a user's seen marks, notificationId → seenAt: "inbox:seen:{7}".
func InboxSeenKey(user int64) string { return "inbox:seen:" + userTag(user) }

// InboxArchivedKey holds a user's archived items, notificationId → archivedAt:
// "inbox:archived:{7}".
func InboxArchivedKey(user int64) string { return "inbox:archived:" + userTag(user) }

// InboxDueKey holds a user's timers, "s:<id>" (snoozed until) and "x:<id>"
// (expires at) scored in ms: "inbox:due:{7}".
func InboxDueKey(user int64) string { return "inbox:due:" + userTag(user) }

// InboxCountsKey holds a user's exact counts, kept by the inbox scripts:
// "inbox:counts:{7}".
func InboxCountsKey(user int64) string { return "inbox:counts:" + userTag(user) }

// InboxDeletedKey remembers a user's deleted and expired items, and events
// joined into a group, scored by when (ms), so that a retried publish does
// not bring them back: "inbox:deleted:{7}".
func InboxDeletedKey(user int64) string { return "inbox:deleted:" + userTag(user) }

// InboxGroupsKey holds a user's groups: "k:<groupKey>" → the open item of
// the key, "g:<notificationId>" → the group's record: "inbox:groups:{7}".
func InboxGroupsKey(user int64) string { return "inbox:groups:" + userTag(user) }

// InboxTimerShards is how many index keys list the users with inbox timers;
// their hash tags spread them over a cluster's masters.
const InboxTimerShards = 16

// InboxTimersKey lists users with inbox timers (snooze, expiry), user → the
// earliest due time in ms: "inbox_timers:{it3}".
func InboxTimersKey(shard int) string { return "inbox_timers:{it" + strconv.Itoa(shard) + "}" }

// UnreadCountKey is a user's unread counter: "unread_count:{7}".
func UnreadCountKey(user int64) string { return "unread_count:" + userTag(user) }

// ReadStatusKey is a user's write-behind buffer, notificationId → readAt: "read_status:{7}".
func ReadStatusKey(user int64) string { return "read_status:" + userTag(user) }

// ReadDeadKey holds reads the sink refused for good, notificationId → JSON
// {readAt, reason}: "read_dead:{7}".
func ReadDeadKey(user int64) string { return "read_dead:" + userTag(user) }

// MutedKey is the set of event types a user muted: "settings:muted:{7}".
func MutedKey(user int64) string { return "settings:muted:" + userTag(user) }

// ReadPendingShards is how many index keys list the users with pending reads;
// their hash tags spread them over a cluster's masters.
const ReadPendingShards = 16

// ReadPendingKey lists users with reads waiting for the flusher, user → a
// counter bumped by every read: "read_pending:{rp3}".
func ReadPendingKey(shard int) string { return "read_pending:{rp" + strconv.Itoa(shard) + "}" }

// OutboxKey holds a room's notifications whose inbox writes may be unfinished,
// notificationId → "<ms>\n<recipient ids, comma separated>": "outbox:{42}".
func OutboxKey(room int64) string { return "outbox:" + roomTag(room) }

// OutboxRoomsKey lists rooms that may hold outbox entries, room → last touch
// (ms). It is one key and is only touched by plain commands.
const OutboxRoomsKey = "outbox:rooms"

// A topic is what a stream follows: a room (topic > 0, the room id) or a
// user's notification log (topic < 0, the user id negated). Both are a history
// stream with a seq counter and a live channel, so rooms, repair and catch-up
// serve them alike.

// UserTopic is the topic of a user's notification log.
func UserTopic(user int64) int64 { return -user }

// TopicHistoryKey is a topic's history stream: a room's events or "user:log:{7}".
func TopicHistoryKey(topic int64) string {
	if topic < 0 {
		return "user:log:" + userTag(-topic)
	}
	return EventsKey(topic)
}

// TopicSeqKey is a topic's sequence counter: a room's or "user:seq:{7}".
func TopicSeqKey(topic int64) string {
	if topic < 0 {
		return "user:seq:" + userTag(-topic)
	}
	return RoomSeqKey(topic)
}

// TopicChannel is a topic's live channel: a room's or "user:{7}".
func TopicChannel(topic int64) string {
	if topic < 0 {
		return UserChannel(-topic)
	}
	return RoomChannel(topic)
}

// UserChannel carries a user's notification log live: "user:{7}".
func UserChannel(user int64) string { return "user:" + userTag(user) }

// userChannelPattern matches every user channel.
const userChannelPattern = "user:*"

// LockKey names a lock: "lock:<name>".
func LockKey(name string) string { return "lock:" + name }

// DeliveryKey holds a user's deliveries beyond the tab, "<notificationId>|<channel>"
// → the record (JSON, see lua/delivery_schedule.lua), besides "digest|<channel>"
// (the open digest's send time) and "hol|<channel>" (the retrying head of
// the channel's queue): "delivery:{7}".
func DeliveryKey(user int64) string { return "delivery:" + userTag(user) }

// DeliveryDueKey orders a user's pending deliveries by due time (ms); one
// being handed off is scored by its lease's end: "delivery:due:{7}".
func DeliveryDueKey(user int64) string { return "delivery:due:" + userTag(user) }

// DeliveryDoneKey lists a user's finished deliveries by when (ms), so that
// they are dropped DELIVERY_RECORD_DAYS later: "delivery:done:{7}".
func DeliveryDoneKey(user int64) string { return "delivery:done:" + userTag(user) }

// DeliverySentPrefix starts a user's per-channel hand-off log, the caps'
// sliding windows: "delivery:sent:{7}:push" (a zset, first record id →
// when, ms).
func DeliverySentPrefix(user int64) string { return "delivery:sent:" + userTag(user) + ":" }

// DeliveryDedupePrefix starts a user's dedupe keys, each held by the record
// that went out under it for its window: "delivery:dedupe:{7}:push:<key>".
func DeliveryDedupePrefix(user int64) string { return "delivery:dedupe:" + userTag(user) + ":" }

// ChannelSettingsKey holds a user's delivery preferences: "<channel>" →
// {"enabled","mutedEventTypes"} and "quiet" → {"start","end","timeZone"}:
// "settings:channels:{7}".
func ChannelSettingsKey(user int64) string { return "settings:channels:" + userTag(user) }

// DeliveryShards is how many index keys list due deliveries (and dead
// ones); their hash tags spread them over a cluster's masters.
const DeliveryShards = 16

// DeliveriesDueKey lists when users have deliveries falling due, one
// member per reason to look ("<user>:<ms>:<tag>", scored in ms):
// "deliveries_due:{dd3}".
func DeliveriesDueKey(shard int) string { return "deliveries_due:{dd" + strconv.Itoa(shard) + "}" }

// DeliveriesDeadKey lists dead deliveries, "<user>|<notificationId>|<channel>"
// scored by when they died (ms): "deliveries_dead:{dx3}".
func DeliveriesDeadKey(shard int) string { return "deliveries_dead:{dx" + strconv.Itoa(shard) + "}" }

// NotificationDeliveriesKey lists the deliveries of one notification,
// "<user>|<channel>": "deliveries:{42}:1708070400000-0".
func NotificationDeliveriesKey(room int64, streamID string) string {
	return "deliveries:" + roomTag(room) + ":" + streamID
}

// IngestKey is ingest partition p's stream, which a backend fills with XADD
// (field event: a publish body): "ingest:{3}". A room's partition is
// roomId mod INGEST_PARTITIONS.
func IngestKey(p int) string { return "ingest:{" + strconv.Itoa(p) + "}" }

// IngestDeadKey keeps partition p's entries that could not be published,
// each under its own entry id: "ingest:dead:{3}".
func IngestDeadKey(p int) string { return "ingest:dead:{" + strconv.Itoa(p) + "}" }

// IngestLeaseKey is held by the instance consuming partition p:
// "lock:ingest:{3}".
func IngestLeaseKey(p int) string { return LockKey("ingest:{" + strconv.Itoa(p) + "}") }

// IngestInstancesKey lists the instances that consume ingest partitions,
// each scored by the end of its heartbeat (ms), so that each takes its
// share.
const IngestInstancesKey = "ingest:instances"

// IngestGroup is the consumer group every instance reads the ingest
// streams through.
const IngestGroup = "roomhub"

// IngestIdempotencyKey is the idempotency key of an ingest entry that names
// none: "ingest:<entry id>".
func IngestIdempotencyKey(entryID string) string { return "ingest:" + entryID }

// PushSubscriptionsKey is a user's Web Push subscriptions: a hash, endpoint
// → {"sub": the browser's PushSubscription, "at": when it was last sent to
// the hub (ms)}; at most webpush.MaxPerUser.
func PushSubscriptionsKey(user int64) string { return "push:subs:" + userTag(user) }

// PushOwnerKey names the user an endpoint's subscription belongs to (a
// string, the user id; it lives as long as an unseen subscription): an
// endpoint is one browser's, so subscribing it as another user moves it.
// The endpoint is hashed: the key's length does not grow with it.
func PushOwnerKey(endpoint string) string { return hashed("push:owner:", endpoint) }

// PushDevicesKey is a user's phones: a hash, device id → {"p": platform
// (fcm, apns), "t": token, "l": label, "e": environment (apns: sandbox),
// "off": consent withdrawn, "added", "at": first and last registered (ms)};
// at most push.MaxPerPlatform a platform. It lives push.DeviceTTL after the
// last registration.
func PushDevicesKey(user int64) string { return "push:devices:" + userTag(user) }

// PushSentKey is when the hub last sent to each of a user's devices and
// browsers: a hash, device id → ms (lastSentAt), beside PushDevicesKey.
func PushSentKey(user int64) string { return "push:sent:" + userTag(user) }

// PushDeviceOwnerKey names the user a device token belongs to (a string,
// the user id; it lives as long as the device): registering a token as
// another user moves it. The token is hashed.
func PushDeviceOwnerKey(platform, token string) string {
	return hashed("push:device:owner:", platform+":"+token)
}

// PushNewTokensKey counts the tokens and endpoints new to a user (phones
// and browsers) registered since the window began: a string, living
// push.NewTokenWindow from the first. Past push.MaxNewTokens a new one is
// refused, so a user cannot mint owner keys without bound.
func PushNewTokensKey(user int64) string { return "push:new:" + userTag(user) }

// PushDevicesCountKey counts every user's devices of a platform, for the
// push_devices gauge.
func PushDevicesCountKey(platform string) string { return "push:devices:count:" + platform }

// hashed is prefix and the first half of s's SHA-256 in hex: a name whose
// length does not grow with s, and that does not show it.
func hashed(prefix, s string) string {
	sum := sha256.Sum256([]byte(s))
	return prefix + hex.EncodeToString(sum[:16])
}

// StreamTicketKey keeps the access token a stream ticket stands for, for
// StreamTicketTTL (a string, deleted when used). The ticket is hashed: a
// reader of the keys cannot use it.
func StreamTicketKey(ticket string) string { return hashed("stream:ticket:", ticket) }

// PushSubscriptionsCountKey counts every user's subscriptions, for the
// webpush_subscriptions gauge (kept beside the writes, not with them: on a
// cluster it lives in another slot).
const PushSubscriptionsCountKey = "push:subs:count"

// PushVAPIDKey holds the VAPID key pair the hub made outside production
// ("<public> <private>"), so that every instance signs with one key.
const PushVAPIDKey = "push:vapid"
