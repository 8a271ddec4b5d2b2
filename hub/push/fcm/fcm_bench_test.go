package fcm

import (
	"context"
	"net/http"
	"testing"
	"time"

	"roomhub/hub/push"
	"roomhub/internal/testfcm"
)

// BenchmarkSendOne is one FCM message: built, sent over HTTP/2 with the
// instance's access token, its answer read, to the stand-in in the same
// process (so the time and allocations include the stand-in's side).
func BenchmarkSendOne(b *testing.B) {
	fs := testfcm.Start(b)
	conf, project, err := Config{Credentials: fs.Key(), BaseURL: fs.URL}.parse()
	if err != nil {
		b.Fatal(err)
	}
	client := push.NewClient(5*time.Second, fs.Client().Transport.(*http.Transport).TLSClientConfig, nil)
	s := &Service{send: fs.URL + "/v1/projects/" + project + "/messages:send", client: client, timeout: 5 * time.Second,
		gate: push.NewGate(push.MaxInFlight, push.MaxPerOrigin, time.Now), tokens: newTokens(conf, client)}
	f := push.Face{NotificationID: "42:1-0", EventType: "comment.created", Title: "Ann replied", Body: "Looks good", Severity: "high"}
	ctx := context.Background()
	for b.Loop() {
		if a := s.sendOne(ctx, "fcm-token:bench", f, 3); !a.Sent {
			b.Fatalf("%+v", a)
		}
	}
}
