package hub

import (
	"slices"
	"strings"
)

// The channels the hub sends itself (package push's subpackages); any
// other channel is handed to the backend's gateway (DELIVERY_SINK_URL).
const (
	WebPushChannel = "webpush" // Web Push, to browsers
	FCMChannel     = "fcm"     // Firebase Cloud Messaging (HTTP v1), to Android and iOS apps
	APNSChannel    = "apns"    // Apple Push Notification service, to iOS apps
)

// SentByHub reports whether the hub sends channel ch itself.
func SentByHub(ch string) bool { return ch == WebPushChannel || ch == FCMChannel || ch == APNSChannel }

// WebPush reports whether the webpush channel is on.
func (c Config) WebPush() bool { return c.DeliveryChannel(WebPushChannel) }

// FCM reports whether the fcm channel is on.
func (c Config) FCM() bool { return c.DeliveryChannel(FCMChannel) }

// APNS reports whether the apns channel is on.
func (c Config) APNS() bool { return c.DeliveryChannel(APNSChannel) }

// Devices reports whether a mobile channel (fcm, apns) is on: the device
// routes register their tokens.
func (c Config) Devices() bool { return c.FCM() || c.APNS() }

// WebPushKeysSet reports whether the VAPID keys come from the environment
// (else, in the embedded dev mode alone, the hub makes a pair and keeps it
// in its Redis).
func (c Config) WebPushKeysSet() bool { return c.WebPushPublicKey != "" }

// checkWebPush: the three WEBPUSH_ variables all set or none (none only in
// the embedded dev mode), and a subject that is mailto: or https:.
func (c Config) checkWebPush() error {
	vars := [][2]string{{"WEBPUSH_VAPID_PUBLIC_KEY", c.WebPushPublicKey}, {"WEBPUSH_VAPID_PRIVATE_KEY", c.WebPushPrivateKey}, {"WEBPUSH_SUBJECT", c.WebPushSubject}}
	set := 0
	for _, v := range vars {
		if v[1] != "" {
			set++
		}
	}
	if set > 0 && set < len(vars) {
		for _, v := range vars {
			if v[1] == "" {
				return &ConfigError{Var: v[0], Value: "", Reason: "the WEBPUSH_ variables go together: set all three or none"}
			}
		}
	}
	if set == 0 && c.WebPush() && (c.Production() || !c.Embedded()) {
		return &ConfigError{Var: "WEBPUSH_VAPID_PUBLIC_KEY", Value: "", Reason: "the webpush channel with a real Redis needs WEBPUSH_VAPID_PUBLIC_KEY, WEBPUSH_VAPID_PRIVATE_KEY and WEBPUSH_SUBJECT (go run . webpush-keys prints a pair); only the embedded dev mode makes its own"}
	}
	if c.WebPushSubject != "" && !strings.HasPrefix(c.WebPushSubject, "mailto:") && !strings.HasPrefix(c.WebPushSubject, "https://") {
		return &ConfigError{Var: "WEBPUSH_SUBJECT", Value: c.WebPushSubject, Reason: "must be a mailto: or https:// URL"}
	}
	return nil
}

// checkMobilePush: a channel listed has its keys; the APNS_ keys go
// together whether or not apns is listed; the services' URLs are https.
func (c Config) checkMobilePush() error {
	if c.FCM() && c.FCMCredentials == "" {
		return &ConfigError{Var: "FCM_CREDENTIALS", Value: "", Reason: "the fcm channel needs a service account key (its JSON, or the path of its file)"}
	}
	apns := [][2]string{{"APNS_KEY_ID", c.APNSKeyID}, {"APNS_TEAM_ID", c.APNSTeamID}, {"APNS_PRIVATE_KEY", c.APNSPrivateKey}, {"APNS_TOPIC", c.APNSTopic}}
	if i := slices.IndexFunc(apns, func(v [2]string) bool { return v[1] == "" }); i >= 0 &&
		(c.APNS() || slices.ContainsFunc(apns, func(v [2]string) bool { return v[1] != "" })) {
		return &ConfigError{Var: apns[i][0], Value: "", Reason: "the apns channel needs APNS_KEY_ID, APNS_TEAM_ID, APNS_PRIVATE_KEY and APNS_TOPIC, all four"}
	}
	for _, v := range [][2]string{{"FCM_BASE_URL", c.FCMBaseURL}, {"APNS_BASE_URL", c.APNSBaseURL}, {"APNS_SANDBOX_BASE_URL", c.APNSSandboxBaseURL}} {
		if !strings.HasPrefix(v[1], "https://") || len(v[1]) == len("https://") {
			return &ConfigError{Var: v[0], Value: v[1], Reason: "must be an https:// URL"}
		}
	}
	return nil
}
