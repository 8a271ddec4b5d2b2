package push

// The channels the hub sends itself (this package's subpackages); any other
// channel of DELIVERY_CHANNELS is handed to the backend's gateway
// (DELIVERY_SINK_URL).
const (
	WebPushChannel = "webpush" // Web Push, to browsers
	FCMChannel     = "fcm"     // Firebase Cloud Messaging (HTTP v1), to Android and iOS apps
	APNSChannel    = "apns"    // Apple Push Notification service, to iOS apps
)

// SentByHub reports whether the hub sends channel ch itself.
func SentByHub(ch string) bool { return ch == WebPushChannel || ch == FCMChannel || ch == APNSChannel }
