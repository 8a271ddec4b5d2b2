package main

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
)

// A Centrifugo publication's t and seq are read from its data; its connect
// message and pings are not events.
func TestCentrifugoEvent_ReadsPublicationsOnly(t *testing.T) {
	pub := `{"channel":"room7","pub":{"data":{"t":1764200000000000000,"seq":42,"pad":"xx"},"offset":3}}`
	ts, seq, ok := centrifugoEvent([]byte(pub))
	if !ok || ts != 1764200000000000000 || seq != 42 {
		t.Fatalf("publication read as t=%d seq=%d ok=%v", ts, seq, ok)
	}
	for _, msg := range []string{`{"connect":{"client":"c1","version":"6.9.1","subs":{"room7":{}},"ping":25}}`, `{}`, `not json`} {
		if _, _, ok := centrifugoEvent([]byte(msg)); ok {
			t.Fatalf("%s read as a publication", msg)
		}
	}
}

// The stream's address carries a connect command whose token subscribes the
// user to its room's channel.
func TestCentrifugoStreamURL_SubscribesByTheToken(t *testing.T) {
	u, err := url.Parse(centrifugoStreamURL("http://127.0.0.1:8000", "s3cret", 12, 7))
	if err != nil || u.Path != "/connection/uni_sse" {
		t.Fatalf("address %v, %v", u, err)
	}
	connect := u.Query().Get("cf_connect")
	tok, ok := strings.CutPrefix(connect, `{"token":"`)
	if !ok {
		t.Fatalf("cf_connect is %q", connect)
	}
	parts := strings.Split(strings.TrimSuffix(tok, `"}`), ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a JWT", tok)
	}
	claims, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || !strings.Contains(string(claims), `"sub":"12"`) || !strings.Contains(string(claims), `"channels":["room7"]`) {
		t.Fatalf("claims %s, %v", claims, err)
	}
}
