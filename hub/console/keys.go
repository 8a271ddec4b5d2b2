package console

// Redis key names of the operator's console, all in one place (the core's
// are in hub/keys.go).

// SecretKey holds the random secret every instance signs sessions with
// (with the password: a new password ends every session). Written once,
// by the first instance that needs it: "console:secret".
const SecretKey = "console:secret"

// revokedKey marks a session signed out until it would have expired:
// "console:revoked:<session id>".
func revokedKey(sid string) string { return "console:revoked:" + sid }
