package push

import "roomhub/hub"

// Redis key names the channels the hub sends itself share, all in one place
// (webpush's own are in its keys.go, the core's in hub/keys.go). A user's
// keys carry hub.UserTag, so a script may touch them together.

// DevicesKey is a user's phones: a hash, device id → {"p": platform
// (fcm, apns), "t": token, "l": label, "e": environment (apns: sandbox),
// "off": consent withdrawn, "added", "at": first and last registered (ms)};
// at most push.MaxPerPlatform a platform. It lives push.DeviceTTL after the
// last registration.
func DevicesKey(user int64) string { return "push:devices:" + hub.UserTag(user) }

// SentKey is when the hub last sent to each of a user's devices and
// browsers: a hash, device id → ms (lastSentAt), beside PushDevicesKey.
func SentKey(user int64) string { return "push:sent:" + hub.UserTag(user) }

// DeviceOwnerKey names the user a device token belongs to (a string,
// the user id; it lives as long as the device): registering a token as
// another user moves it. The token is hashed.
func DeviceOwnerKey(platform, token string) string {
	return hub.HashedKey("push:device:owner:", platform+":"+token)
}

// NewTokensKey counts the tokens and endpoints new to a user (phones
// and browsers) registered since the window began: a string, living
// push.NewTokenWindow from the first. Past push.MaxNewTokens a new one is
// refused, so a user cannot mint owner keys without bound.
func NewTokensKey(user int64) string { return "push:new:" + hub.UserTag(user) }

// DevicesCountKey counts every user's devices of a platform, for the
// push_devices gauge.
func DevicesCountKey(platform string) string { return "push:devices:count:" + platform }
