// Package webpush is roomhub's own Web Push sender, the built-in delivery
// channel "webpush": the hub is the gateway. It holds the protocol and the
// users' subscriptions (store.go, in Redis), no delivery state (package
// delivery keeps that, and calls Service.Push as the channel's Sender):
// the VAPID key pair (RFC 8292), message
// encryption (RFC 8291, aes128gcm of RFC 8188), the checks a browser's
// subscription must pass (an https endpoint that is not loopback, link-local
// or private: the SSRF rule), and one push to one subscription with its
// answer classified as the delivery worker needs it.
//
// It is written on the standard library (crypto/ecdh, crypto/hkdf,
// crypto/aes) and golang-jwt (already the hub's JWT library) rather than a
// Web Push library: the hub must choose the salt and key in tests (RFC
// 8291's Appendix A, byte for byte), dial through its own SSRF guard, never
// follow redirects and read every answer itself; what is left is about a
// hundred lines.
package webpush
