package inbox

import "roomhub/hub"

// ItemKeys are the keys of a user's items in the order lua/inbox_item.lua
// takes them: what another script (delivery's claim) passes to read the
// items in its own atomic step.
func ItemKeys(user int64) []string {
	return []string{hub.InboxKey(user), hub.InboxOrderKey(user), hub.InboxReadKey(user), hub.InboxMetaKey(user),
		hub.InboxSeenKey(user), hub.InboxArchivedKey(user), hub.InboxDueKey(user), hub.InboxGroupsKey(user)}
}

// keysPerUser is how many keys inboxKeys gives.
const keysPerUser = 15

// inboxKeys are the keys every inbox script takes: ItemKeys, then those
// lua/inbox_lib.lua lists.
func inboxKeys(user int64) []string {
	log := hub.UserTopic(user)
	return append(ItemKeys(user), hub.UnreadCountKey(user), hub.TopicHistoryKey(log), hub.TopicSeqKey(log),
		hub.ReadStatusKey(user), hub.MutedKey(user), hub.InboxCountsKey(user), hub.InboxDeletedKey(user))
}

// inboxArgs are the arguments every inbox script takes first, then extra.
func (ib *Inbox) inboxArgs(user int64, now string, extra ...string) []string {
	return ib.scriptArgs(hub.UserChannel(user), now, extra...)
}

// scriptArgs are the arguments every inbox script takes first (ARGV[1..6]
// of lua/inbox_lib.lua), then extra: channel is the user's, or "" when the
// script names each recipient's channel itself (inbox_add.lua).
func (ib *Inbox) scriptArgs(channel, now string, extra ...string) []string {
	sharded := "0"
	if ib.rdb.Sharded() {
		sharded = "1"
	}
	return append([]string{itoa(ib.cfg.Retention.Milliseconds()), itoa(int64(ib.cfg.MaxEntries)),
		itoa(int64(ib.cfg.MaxEntries)), channel, sharded, now}, extra...)
}
