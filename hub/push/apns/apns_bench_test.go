package apns

import (
	"context"
	"net/http"
	"testing"
	"time"

	"roomhub/hub/push"
	"roomhub/internal/testapns"
)

// BenchmarkSendOne is one APNs push: its payload built, sent over HTTP/2
// with the provider token (its signature checked by the stand-in in the
// same process, so the time and allocations include the stand-in's side).
func BenchmarkSendOne(b *testing.B) {
	as := testapns.Start(b)
	key, err := Config{PrivateKey: as.Key()}.parseKey()
	if err != nil {
		b.Fatal(err)
	}
	s := &Service{topic: testapns.Topic, timeout: 5 * time.Second, hosts: map[bool]string{false: as.URL},
		client: push.NewClient(5*time.Second, as.Client().Transport.(*http.Transport).TLSClientConfig, nil),
		gate:   push.NewGate(push.MaxInFlight, push.MaxPerOrigin, time.Now),
		tokens: newTokens(key, testapns.KeyID, testapns.Team, time.Now)}
	f := push.Face{NotificationID: "42:1-0", EventType: "comment.created", Title: "Ann replied", Body: "Looks good", Severity: "high"}
	d := push.Device{Token: "ab00000000000000000000000000000000000000000000000000000000000000"}
	ctx := context.Background()
	for b.Loop() {
		if a := s.sendOne(ctx, d, f, payloadOf(f, 3)); !a.Sent {
			b.Fatalf("%+v", a)
		}
	}
}
