package webpush

import "roomhub/hub"

// Redis key names of the webpush channel, all in one place (the core's are in
// hub/keys.go). A user's keys carry hub.UserTag, so a script may touch them
// together.

// SubscriptionsKey is a user's Web Push subscriptions: a hash, endpoint
// → {"sub": the browser's PushSubscription, "at": when it was last sent to
// the hub (ms)}; at most webpush.MaxPerUser.
func SubscriptionsKey(user int64) string { return "push:subs:" + hub.UserTag(user) }

// OwnerKey names the user an endpoint's subscription belongs to (a
// string, the user id; it lives as long as an unseen subscription): an
// endpoint is one browser's, so subscribing it as another user moves it.
// The endpoint is hashed: the key's length does not grow with it.
func OwnerKey(endpoint string) string { return hub.HashedKey("push:owner:", endpoint) }

// SubscriptionsCountKey counts every user's subscriptions, for the
// webpush_subscriptions gauge (kept beside the writes, not with them: on a
// cluster it lives in another slot).
const SubscriptionsCountKey = "push:subs:count"

// VAPIDKey holds the VAPID key pair the hub made outside production
// ("<public> <private>"), so that every instance signs with one key.
const VAPIDKey = "push:vapid"
