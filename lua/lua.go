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

//go:embed publish_lib.lua
var publishLib string

//go:embed publish_event.lua
var publishEvent string

//go:embed publish_presence.lua
var publishPresence string

// The publish scripts, each joined behind the shared head publish_lib.lua
// (the keys and arguments they share, and the publish itself).
var (
	// PublishEvent atomically checks idempotency, numbers, stores and
	// publishes a backend's event, keeping its owner's note in the outbox.
	PublishEvent = publishLib + publishEvent
	// PublishPresence builds one coalesced presence.update from the room's
	// queued transitions and publishes it like an event.
	PublishPresence = publishLib + publishPresence
)

//go:embed presence_lib.lua
var presenceLib string

//go:embed presence_touch.lua
var presenceTouch string

//go:embed presence_refresh.lua
var presenceRefresh string

// The presence scripts that keep a room's keys alive, each behind the
// shared head presence_lib.lua.
var (
	// PresenceTouch marks users present in rooms through members (streams
	// or heartbeats), many touches a call.
	PresenceTouch = presenceLib + presenceTouch
	// PresenceRefresh refreshes the last heartbeat of an instance's
	// streaming users, many rooms a call.
	PresenceRefresh = presenceLib + presenceRefresh
)

//go:embed instances_lib.lua
var instancesLib string

//go:embed presence_leave.lua
var presenceLeave string

// PresenceLeave removes members and reports the users left with none
// (behind instances_lib.lua: it removes dead instances' streams).
var PresenceLeave = instancesLib + presenceLeave

// PresenceInstance renews a hub instance's lease and reads the registry.
//
//go:embed presence_instance.lua
var PresenceInstance string

//go:embed user_conns.lua
var userConns string

// UserConns registers a stream and evicts the user's oldest beyond the cap
// (behind instances_lib.lua: it forgets dead instances' streams).
var UserConns = instancesLib + userConns

//go:embed inbox_item.lua
var inboxItem string

//go:embed inbox_frame.lua
var inboxFrame string

//go:embed inbox_lib.lua
var inboxLib string

//go:embed inbox_order.lua
var inboxOrder string

//go:embed inbox_log.lua
var inboxLog string

//go:embed inbox_filter.lua
var inboxFilter string

//go:embed delivery_schedule.lua
var deliverySchedule string

//go:embed inbox_add.lua
var inboxAdd string

//go:embed inbox_add_plain.lua
var inboxAddPlain string

//go:embed inbox_act.lua
var inboxAct string

//go:embed inbox_view.lua
var inboxView string

//go:embed inbox_log_read.lua
var inboxLogRead string

// The inbox scripts, each joined behind the inbox's libraries: its items
// as readers see them (inbox_item.lua), then the shared head (inbox_lib.lua:
// keys and counts), the items' order, retention and timers
// (inbox_order.lua), the user's log (inbox_log.lua), and the filters for
// those that list or act in bulk (inbox_filter.lua).
var (
	// InboxAdd adds one notification to a user's inbox, exactly once, with
	// its deliveries beyond the tab (delivery's delivery_schedule.lua).
	InboxAdd = inboxItem + inboxFrame + inboxLib + inboxOrder + inboxLog + deliverySchedule + inboxAdd
	// InboxAddPlain adds a plain notification (no severity but normal, no
	// tags, expiry or group) to the inboxes it takes as they are, and
	// answers "more" for the others, which InboxAdd adds.
	InboxAddPlain = inboxItem + inboxFrame + deliverySchedule + inboxAddPlain
	// InboxAct changes the state of one item, of listed ones, or of every
	// one that passes a filter: read, seen, archive, snooze, delete, ….
	InboxAct = inboxItem + inboxFrame + inboxLib + inboxOrder + inboxLog + inboxFilter + inboxAct
	// InboxView returns the unread count, the counts or one page of the
	// inbox, or only settles it (the timer worker).
	InboxView = inboxItem + inboxFrame + inboxLib + inboxOrder + inboxLog + inboxFilter + inboxView
	// InboxLogRead reads a user's log as the events it sent: what a user
	// stream resumes from.
	InboxLogRead = inboxItem + inboxFrame + inboxLib + inboxOrder + inboxLog + inboxLogRead
)

// OutboxTouch lists a room in outbox:rooms with Redis' time.
//
//go:embed outbox_touch.lua
var OutboxTouch string

// ZremUnchanged removes (or rescores) an index member unless its score
// changed since read.
//
//go:embed zrem_unchanged.lua
var ZremUnchanged string

// ReadSettle removes flushed reads from the write-behind buffer (ack), or
// moves them to dead letters (dead).
//
//go:embed read_settle.lua
var ReadSettle string

//go:embed delivery_claim.lua
var deliveryClaim string

// DeliveryClaim decides a user's due deliveries beyond the tab and leases
// the rest for hand-offs; it reads the user's items through the inbox's
// library (joined behind instances_lib.lua and inbox_item.lua).
var DeliveryClaim = instancesLib + inboxItem + deliveryClaim

// DeliveryEnd records how a hand-off ended.
//
//go:embed delivery_end.lua
var DeliveryEnd string

// DeliveryRenew renews the lease of a hand-off in flight.
//
//go:embed delivery_renew.lua
var DeliveryRenew string

// DeliveryRedrive puts dead deliveries back as due now.
//
//go:embed delivery_redrive.lua
var DeliveryRedrive string

// ZsetPage reads one page of a sorted set after a (score, member) cursor.
//
//go:embed zset_page.lua
var ZsetPage string

// Lease takes a lease if it is free or renews it for its holder.
//
//go:embed lease.lua
var Lease string

// IngestDone keeps an ingest read's dead entries, acknowledges what it
// finished and trims the stream to what is left.
//
//go:embed ingest_done.lua
var IngestDone string

// PushSubscribe keeps a user's Web Push subscription (see the file).
//
//go:embed push_subscribe.lua
var PushSubscribe string

// IngestRead reads ingest partitions, pending entries first, within a byte
// budget; an entry over the most one may hold comes back without its text.
//
//go:embed ingest_read.lua
var IngestRead string

// PushDeviceRegister keeps one of a user's phones (fcm, apns): added or
// refreshed, a replaced token dropped, at most so many a platform.
//
//go:embed push_device_register.lua
var PushDeviceRegister string

// PushConsent sets consent on one of a user's devices or browsers.
//
//go:embed push_consent.lua
var PushConsent string

//go:embed topic_lib.lua
var topicLib string

//go:embed topic_follow.lua
var topicFollow string

//go:embed topic_unfollow.lua
var topicUnfollow string

//go:embed topic_page.lua
var topicPage string

//go:embed topic_snapshot.lua
var topicSnapshot string

//go:embed topic_walk.lua
var topicWalk string

//go:embed topic_delete.lua
var topicDelete string

// The scripts on a topic's followers, each behind topic_lib.lua (their
// keys and chunks).
var (
	// TopicFollow adds followers to a topic, each once.
	TopicFollow = topicLib + topicFollow
	// TopicUnfollow removes followers from a topic.
	TopicUnfollow = topicLib + topicUnfollow
	// TopicPage reads a page of a topic's followers, ascending.
	TopicPage = topicLib + topicPage
	// TopicSnapshot takes a topic publish's snapshot: the followers, the
	// last seq, and how many of some ids follow.
	TopicSnapshot = topicLib + topicSnapshot
	// TopicWalk reads a fan-out's next followers, ascending.
	TopicWalk = topicLib + topicWalk
	// TopicDelete empties a topic, its chunks moved to a trash key.
	TopicDelete = topicLib + topicDelete
)

// FanoutStart records a topic publish's fan-out, once.
//
//go:embed fanout_start.lua
var FanoutStart string

// FanoutStep records a step of a fan-out by the holder of its lease.
//
//go:embed fanout_step.lua
var FanoutStep string

// FanoutCancel cancels a running fan-out.
//
//go:embed fanout_cancel.lua
var FanoutCancel string

// TopicUser follows, unfollows or takes back a follow in people's own
// lists of topics.
//
//go:embed topic_user.lua
var TopicUser string
