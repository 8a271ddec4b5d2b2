package web_test

import (
	"fmt"
	"roomhub/internal/testbrowser"
	"roomhub/internal/testfcm"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
	"testing"
	"time"
)

// The element's preferences list the person's devices with a switch each
// (consent per device, in real Chromium): one turned off and saved is off
// at the hub, and FCM gets nothing for it.
func TestBrowser_InboxElementListsDevicesWithConsent(t *testing.T) {
	t.Parallel()
	fs := testfcm.Start(t)
	th := testhub.StartFCMHub(t, testredis.Start(t).Addr(), fs, nil)
	const user = 7
	th.Register(t, user, fmt.Sprintf(`{"platform":"fcm","token":%q,"label":"Pixel 9"}`, testhub.FCMToken(7)))
	d := testbrowser.Start(t, "inbox.mjs", th.URL+"/static/inbox.html?user=7", testhub.ArtifactsDir(t))
	d.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	d.Send(t, `CLICK roomhub-inbox .gear`)
	d.Send(t, `TEXT roomhub-inbox .devices label | Pixel 9 (Android)`)
	d.Send(t, `TEXT roomhub-inbox .prefs th | Android`) // the channel's column: the platform's name, not "Fcm"
	d.Send(t, `CLICK roomhub-inbox .devices input[type="checkbox"]`)
	d.Send(t, `CLICK roomhub-inbox .prefs button[type="submit"]`)
	testhub.Eventually(t, 15*time.Second, "the device off at the hub", func() bool {
		ds := th.DevicesOf(t, user)
		return len(ds) == 1 && !ds[0].Enabled
	})
	if r := th.WaitDelivery(t, th.NotifyWith(t, 42, "", user), user, "fcm", "skipped"); testhub.Str(r.Reason) != "unsubscribed" || fs.Tries(testhub.FCMToken(7)) != 0 {
		t.Fatalf("a device turned off: %+v, %d tries", r, fs.Tries(testhub.FCMToken(7)))
	}
}
