package webpush

import (
	"context"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
)

// A key pair printed and read back is the same pair; a public key that is
// not the private key's is refused.
func TestKeys_ParseWhatWasMade(t *testing.T) {
	k, err := NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseKeys(k.Public, k.Private())
	if err != nil || back.Public != k.Public || back.Private() != k.Private() {
		t.Fatalf("parse: %v", err)
	}
	other, _ := NewKeys()
	for _, c := range [][2]string{{other.Public, k.Private()}, {k.Public, "short"}, {"", k.Private()}, {k.Public, k.Public}} {
		if _, err := ParseKeys(c[0], c[1]); err == nil {
			t.Errorf("ParseKeys(%q, %q) took a bad pair", c[0], c[1])
		}
	}
}

// verifyVAPID checks an Authorization header as a push service does, and
// returns its claims.
func verifyVAPID(t *testing.T, header string) jwt.MapClaims {
	t.Helper()
	rest, ok := strings.CutPrefix(header, "vapid t=")
	tok, k, ok2 := strings.Cut(rest, ", k=")
	if !ok || !ok2 {
		t.Fatalf("Authorization %q", header)
	}
	raw, err := decodeB64(k)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		t.Fatal(err)
	}
	claims := jwt.MapClaims{}
	if _, err := jwt.ParseWithClaims(tok, claims, func(*jwt.Token) (any, error) { return pub, nil }, jwt.WithValidMethods([]string{"ES256"})); err != nil {
		t.Fatalf("the VAPID token: %v", err)
	}
	return claims
}

// The VAPID header: an ES256 token the public key verifies, for the
// endpoint's origin, with the subject, expiring within 12 hours.
func TestKeys_AuthorizationIsAVAPIDToken(t *testing.T) {
	k, _ := NewKeys()
	now := time.Now()
	h, err := k.Authorization("https://push.example.net:8443/wpush/v2/abc?x=1", "mailto:ops@example.com", now)
	if err != nil {
		t.Fatal(err)
	}
	c := verifyVAPID(t, h)
	exp, _ := c.GetExpirationTime()
	if c["aud"] != "https://push.example.net:8443" || c["sub"] != "mailto:ops@example.com" || exp == nil ||
		exp.Sub(now) > 12*time.Hour || exp.Sub(now) < 11*time.Hour {
		t.Fatalf("claims %v", c)
	}
}

func sub(endpoint string) Subscription {
	ua, _ := ecdh.P256().GenerateKey(nil)
	var s Subscription
	s.Endpoint = endpoint
	s.Keys.P256dh = b64.EncodeToString(ua.PublicKey().Bytes())
	s.Keys.Auth = b64.EncodeToString([]byte("0123456789abcdef"))
	return s
}

// The SSRF rule and the keys' shape: what is refused, and that every
// refusal of a host or address says the same thing (no DNS oracle).
func TestSubscription_Check(t *testing.T) {
	allowed := []string{"fcm.googleapis.com", "push.apple.com"}
	for _, c := range []struct {
		endpoint string
		ok       bool
	}{
		{"https://fcm.googleapis.com/fcm/send/abc", true},
		{"https://FCM.googleapis.com./fcm/send/abc", true},
		{"https://web.push.apple.com/QGx", true},
		{"https://evilpush.apple.com.attacker.example/x", false},
		{"https://notpush.apple.com/x", false},
		{"https://vm/x", false},
		{"https://redis/x", false},
		{"https://203.0.113.9/push", false}, // an address is no allowed host
		{"http://fcm.googleapis.com/fcm/send/abc", false},
		{"https://user:pw@fcm.googleapis.com/x", false},
		{"ftp://fcm.googleapis.com/x", false},
		{"https:///nohost", false},
		{"https://fcm.googleapis.com/" + strings.Repeat("a", 2100), false},
	} {
		err := sub(c.endpoint).Check(allowed, false)
		if (err == nil) != c.ok {
			t.Errorf("%.60s: %v, want ok=%v", c.endpoint, err, c.ok)
		}
	}
	// Every host or address refused gets one message.
	for _, ep := range []string{"https://vm/x", "https://redis/x", "https://127.0.0.1/x", "https://[64:ff9b::a9fe:a9fe]/x"} {
		if err := sub(ep).Check([]string{"fcm.googleapis.com"}, false); err != errNotAPushService {
			t.Errorf("%s: %v, want the one message", ep, err)
		}
		if err := sub(ep).Check([]string{"*"}, false); err != nil && err != errNotAPushService {
			t.Errorf("%s with any host: %v", ep, err)
		}
	}
	// "*": any host, addresses still under the address rule.
	for ep, ok := range map[string]bool{"https://push.example/x": true, "https://8.8.8.8/x": true, "https://127.0.0.1/x": false, "https://[2002:a9fe:a9fe::1]/x": false} {
		if err := sub(ep).Check([]string{"*"}, false); (err == nil) != ok {
			t.Errorf("%s with *: %v, want ok=%v", ep, err, ok)
		}
	}
	if err := sub("https://127.0.0.1/push").Check([]string{"*"}, true); err != nil {
		t.Errorf("allowPrivate: %v", err)
	}
	bad := sub("https://fcm.googleapis.com/x")
	bad.Keys.Auth = b64.EncodeToString([]byte("short"))
	if bad.Check(allowed, false) == nil {
		t.Error("a 5-byte auth was taken")
	}
	bad = sub("https://fcm.googleapis.com/x")
	bad.Keys.P256dh = b64.EncodeToString(make([]byte, 65))
	if bad.Check(allowed, false) == nil {
		t.Error("a p256dh off the curve was taken")
	}
}

// The address rule, the dialer's guard: every special-purpose block and
// every IPv6 form of an IPv4 address is refused; global addresses pass.
func TestPublic_OnlyGlobalAddresses(t *testing.T) {
	for a, want := range map[string]bool{
		"8.8.8.8": true, "142.250.74.46": true, "2607:f8b0:4004:c07::5f": true, "2a00:1450:4001:82b::200a": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.5": false, "169.254.169.254": false,
		"100.64.0.1": false, "0.0.0.0": false, "0.1.2.3": false, "192.0.0.8": false, "192.0.2.1": false,
		"198.18.0.1": false, "198.19.255.255": false, "198.51.100.7": false, "203.0.113.1": false,
		"224.0.0.1": false, "240.0.0.1": false, "255.255.255.255": false,
		"::1": false, "::": false, "::7f00:1": false, "::ffff:127.0.0.1": false, "::ffff:8.8.8.8": true,
		"64:ff9b::a9fe:a9fe": false, "64:ff9b:1::a9fe:a9fe": false, "2002:a9fe:a9fe::1": false,
		"2001:0:4136:e378:8000:63bf:3fff:fdd2": false, "2001:db8::1": false, "fec0::1": false, "fd00::1": false,
		"fe80::1": false, "ff02::1": false, "100::1": false,
		// outside 2000::/3 and in no block above: unassigned, never routed (hardening V, 7)
		"1::1": false, "4000::1": false, "c000::1": false, "8000::1": false, "1fff:ffff::1": false, "4000::": false,
		"2000::1": true, "3ffe:ffff::1": true,
	} {
		if got := Public(netip.MustParseAddr(a)); got != want {
			t.Errorf("Public(%s) = %v, want %v", a, got, want)
		}
	}
	if guard("[64:ff9b::a9fe:a9fe]:443") == nil || guard("8.8.8.8:443") != nil || guard("nonsense") == nil {
		t.Error("guard")
	}
}

// A push, through a stand-in push service: signed, encrypted for the
// subscription, with the headers the push asked for; the answer comes back
// as it was given. Without allowPrivate the same push never leaves: the
// service is on loopback.
func TestSender_PostsAnEncryptedSignedPush(t *testing.T) {
	ua, _ := ecdh.P256().GenerateKey(nil)
	auth := []byte("0123456789abcdef")
	var got struct {
		plain   string
		headers http.Header
		claims  jwt.MapClaims
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		plain, err := Decrypt(body, auth, ua)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got.plain, got.headers, got.claims = string(plain), r.Header.Clone(), verifyVAPID(t, r.Header.Get("Authorization"))
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	k, _ := NewKeys()
	s := Subscription{Endpoint: srv.URL + "/push/1"}
	s.Keys.P256dh = b64.EncodeToString(ua.PublicKey().Bytes())
	s.Keys.Auth = b64.EncodeToString(auth)
	tlsConf := srv.Client().Transport.(*http.Transport).TLSClientConfig
	payload, _ := json.Marshal(map[string]string{"title": "Hi"})
	p := Push{Payload: payload, TTL: time.Hour, Urgency: Urgency("critical"), Topic: Topic("likes")}

	res := NewSender(k, "mailto:ops@example.com", true, 5*time.Second, tlsConf).Send(context.Background(), s, p)
	if res.Status != http.StatusTooManyRequests || res.RetryAfter != "7" || res.Err != nil {
		t.Fatalf("result %+v", res)
	}
	if got.plain != `{"title":"Hi"}` || got.headers.Get("TTL") != "3600" || got.headers.Get("Urgency") != "high" ||
		got.headers.Get("Content-Encoding") != "aes128gcm" || len(got.headers.Get("Topic")) != 32 || got.claims["aud"] != srv.URL {
		t.Fatalf("the push service got %q, headers %v, claims %v", got.plain, got.headers, got.claims)
	}
	res = NewSender(k, "mailto:ops@example.com", false, 5*time.Second, tlsConf).Send(context.Background(), s, p)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "not public") {
		t.Fatalf("a push to loopback without allowPrivate: %+v", res)
	}
}

// A redirect is an answer, not followed.
func TestSender_FollowsNoRedirect(t *testing.T) {
	followed := false
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			followed = true
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	k, _ := NewKeys()
	res := NewSender(k, "mailto:a@b.c", true, 5*time.Second, srv.Client().Transport.(*http.Transport).TLSClientConfig).
		Send(context.Background(), sub(srv.URL+"/push"), Push{Payload: []byte("{}"), TTL: time.Minute})
	if res.Status != http.StatusTemporaryRedirect || followed {
		t.Fatalf("status %d, followed %v", res.Status, followed)
	}
}

func TestTopicAndUrgency(t *testing.T) {
	if a := Topic("a"); Topic("") != "" || a == Topic("b") || a != Topic("a") || len(Topic(strings.Repeat("k", 64))) != 32 {
		t.Fatal("Topic")
	}
	for sev, want := range map[string]string{"critical": "high", "low": "low", "high": "normal", "normal": "normal", "": "normal"} {
		if Urgency(sev) != want {
			t.Errorf("Urgency(%q) = %q", sev, Urgency(sev))
		}
	}
}

// The subscription's checks face the network (a browser's JSON): nothing
// panics, and what passes can be sealed for.
func FuzzSubscriptionCheck(f *testing.F) {
	f.Add(`{"endpoint":"https://push.example/x","expirationTime":null,"keys":{"p256dh":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4","auth":"BTBZMqHH6r4Tts7J_aSIgg"}}`)
	f.Add(`{"endpoint":"https://[::1]:0/x","keys":{"p256dh":"","auth":""}}`)
	f.Fuzz(func(t *testing.T, s string) {
		var sub Subscription
		if json.Unmarshal([]byte(s), &sub) != nil {
			return
		}
		if sub.Check([]string{"*"}, false) != nil {
			return
		}
		k, err := sub.Decode()
		if err != nil {
			t.Fatalf("checked but not decodable: %v", err)
		}
		if _, err := Encrypt([]byte("x"), k.P256dh, k.Auth); err != nil {
			t.Fatalf("checked but not sealable: %v", err)
		}
	})
}

// The push of an inbox item: its face, read as the element reads it; a
// digest says how many more; a body or title too long for 4 KB is cut, in
// whole characters, and the whole still seals.
func TestOf_TheItemsFaceFitsAPush(t *testing.T) {
	item := func(data string) json.RawMessage {
		return json.RawMessage(`{"notificationId":"42:1-0","eventType":"comment.created","data":` + data + `,"severity":"low","group":{"key":"likes"}}`)
	}
	p, m, ok := Of(7, []json.RawMessage{item(`{"content":"body","url":"javascript:alert(1)"}`), item(`{}`)})
	want := Message{NotificationID: "42:1-0", UserID: "7", Title: "Comment created", Body: "body (+1 more)", Severity: "low", Tag: "group:likes"}
	if !ok || m != want || p.Urgency != "low" || p.Topic != Topic("likes") || p.TTL != 24*time.Hour {
		t.Fatalf("Of: %+v %+v", m, p)
	}
	long := strings.Repeat("가", 3000) // 9,000 bytes of UTF-8
	p, m, _ = Of(7, []json.RawMessage{item(`{"title":"` + long + `","text":"` + long + `"}`)})
	if len(p.Payload) > MaxPayload || m.Body != "" || !utf8.ValidString(m.Title) || !strings.HasSuffix(m.Title, "…") {
		t.Fatalf("a long item: %d bytes, body %d bytes, title valid %v", len(p.Payload), len(m.Body), utf8.ValidString(m.Title))
	}
	ua, _ := ecdh.P256().GenerateKey(nil)
	if _, err := Encrypt(p.Payload, ua.PublicKey().Bytes(), make([]byte, 16)); err != nil {
		t.Fatalf("the cut push does not seal: %v", err)
	}
	if _, _, ok := Of(7, []json.RawMessage{json.RawMessage(`{}`)}); ok {
		t.Fatal("an item without an id made a push")
	}
}

// One signature serves many pushes to one push service for an hour; another
// origin, or an hour later, gets a new one.
func TestSender_ReusesATokenPerOrigin(t *testing.T) {
	k, _ := NewKeys()
	s := NewSender(k, "mailto:a@b.c", false, time.Second, nil)
	now := time.Now()
	s.now = func() time.Time { return now }
	_, a1, _ := s.authorization("https://fcm.googleapis.com/fcm/send/1")
	_, a2, _ := s.authorization("https://fcm.googleapis.com/fcm/send/2")
	_, b, _ := s.authorization("https://updates.push.services.mozilla.com/wpush/v2/x")
	if a1 != a2 || a1 == b {
		t.Fatal("one token per origin: the same for two endpoints of one, another for another")
	}
	if c := verifyVAPID(t, b); c["aud"] != "https://updates.push.services.mozilla.com" {
		t.Fatalf("aud %v", c["aud"])
	}
	now = now.Add(tokenReuse)
	if _, a3, _ := s.authorization("https://fcm.googleapis.com/fcm/send/1"); a3 == a1 {
		t.Fatal("a token older than tokenReuse was used again")
	}
	if len(s.tokens) != 1 {
		t.Fatalf("%d tokens kept, want the one just made", len(s.tokens))
	}
}
