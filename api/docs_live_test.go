package api_test

import (
	"net/http"
	"strings"
	"testing"

	"roomhub/internal/testhub"
	"roomhub/internal/testpush"
	"roomhub/internal/testredis"
)

// docs/delivery.md's device registration, the request as printed (its two
// placeholders filled: a user's token, an FCM token), registers the phone
// with its label.
func TestDocs_DeviceRegistrationRequestAsPrinted(t *testing.T) {
	req := testhub.SnippetAfter(t, "docs/delivery.md", "", "http")
	head, body, ok := strings.Cut(req, "\n\n")
	lines := strings.Split(head, "\n")
	method, path, _ := strings.Cut(lines[0], " ")
	if !ok || len(lines) != 2 || !strings.HasPrefix(lines[1], "Authorization: Bearer <") {
		t.Fatalf("docs/delivery.md's request is not the one this test knows:\n%s", req)
	}
	const user = 31
	th := testhub.StartPushHub(t, testredis.Start(t).Addr(), testpush.Start(t), nil)
	body = strings.Replace(body, "<FCM registration token>", testhub.FCMToken(1), 1)
	code, env := th.Do(t, method, path, map[string]string{"Authorization": "Bearer " + th.Token(t, user)}, body)
	ds := th.DevicesOf(t, user)
	if code != http.StatusOK || len(ds) != 1 || ds[0].Platform != "fcm" || ds[0].Label != "Pixel 9" || !ds[0].Enabled {
		t.Fatalf("the printed request: %d %+v; devices %+v", code, env, ds)
	}
}
