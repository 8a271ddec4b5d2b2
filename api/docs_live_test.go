package api_test

import (
	"net/http"
	"os"
	"os/exec"
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

// docs/topics.md's walk-through, the shell lines as printed, against a hub
// that publishes product.back_in_stock: the follow, the publish answered
// with two recipients, the fan-out done, follower 7's unread count of one.
func TestDocs_TopicsBackInStockAsPrinted(t *testing.T) {
	script := testhub.SnippetAfter(t, "docs/topics.md", "TestDocs_TopicsBackInStockAsPrinted", "sh")
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) {
		c.EventTypes = append(c.EventTypes, "product.back_in_stock")
	})
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "HUB="+th.URL, "KEY="+th.Cfg.InternalAPIKey)
	out, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) != 4 || !strings.Contains(lines[0], `"added":3,"followers":3`) ||
		!strings.Contains(lines[1], `"recipients":2`) || !strings.Contains(lines[2], `"state":"done","recipients":2,"reached":2`) ||
		!strings.Contains(lines[3], `"count":1`) {
		t.Fatalf("the walk-through printed (%v):\n%s", err, out)
	}
	if n := th.UnreadOf(t, 9); n != 0 {
		t.Fatalf("the excluded follower has %d unread", n)
	}
}
