package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"roomhub/internal/testapns"
	"roomhub/internal/testbin"
	"roomhub/internal/testfcm"
	"roomhub/internal/testredis"
)

// FCM and APNs through two instances: A is SIGKILLed while the service
// holds its push; B, started once A holds it (else B could claim it
// first), sends it again once A's lease is gone, and the record ends sent
// after two attempts (at least once, as for a gateway). The binaries reach
// the stand-ins over HTTPS (HTTP/2 for APNs), trusting their certificates
// through SSL_CERT_FILE, with the keys the stand-ins handed out.
func TestBinary_MobilePushSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	fcmToken, apnsToken := "fcm-device:"+strings.Repeat("a", 40), strings.Repeat("ab", 32)
	for _, tc := range []struct {
		channel string
		setUp   func(t *testing.T) (env []string, arrived <-chan string, taken func() int)
		device  string
	}{
		{"fcm", func(t *testing.T) ([]string, <-chan string, func() int) {
			fs := testfcm.Start(t)
			fs.Script(fcmToken, testfcm.Answer{Hold: true}, testfcm.Answer{})
			return []string{"FCM_CREDENTIALS=" + fs.Key(), "FCM_BASE_URL=" + fs.URL, "SSL_CERT_FILE=" + fs.CertFile(t)},
				fs.Arrived(), func() int { return len(fs.Messages()) }
		}, fmt.Sprintf(`{"platform":"fcm","token":%q}`, fcmToken)},
		{"apns", func(t *testing.T) ([]string, <-chan string, func() int) {
			as := testapns.Start(t)
			as.Script(apnsToken, testapns.Answer{Hold: true}, testapns.Answer{})
			return []string{"APNS_KEY_ID=" + testapns.KeyID, "APNS_TEAM_ID=" + testapns.Team, "APNS_PRIVATE_KEY=" + as.Key(),
					"APNS_TOPIC=" + testapns.Topic, "APNS_BASE_URL=" + as.URL, "SSL_CERT_FILE=" + as.CertFile(t)},
				as.Arrived(), func() int { return len(as.Notifications()) }
		}, fmt.Sprintf(`{"platform":"apns","token":%q}`, apnsToken)},
	} {
		t.Run(tc.channel, func(t *testing.T) {
			rs := testredis.Start(t)
			keys, arrived, taken := tc.setUp(t)
			env := append([]string{"REDIS_URL=" + rs.URL(), "LOCK_TTL_SECS=2", "DELIVERY_CHANNELS=" + tc.channel,
				`DELIVERY_RULES={"comment.created":{"` + tc.channel + `":{"onlyIfOffline":true}}}`}, keys...)
			a, procA, logsA := testbin.Start(t, bin, env...)
			testbin.WaitHealth(t, a, 200, 15*time.Second)
			postAs(t, a, "/api/v1/push/devices", 9, tc.device)
			nid := "7:" + testbin.Publish(t, nil, a, `{"roomId":7,"eventType":"comment.created","data":{"title":"Still there?"},"recipientIds":[9]}`)
			select {
			case <-arrived: // A's push, held by the service
			case <-time.After(15 * time.Second):
				t.Fatalf("no push arrived; A's log:\n%s", logsA)
			}
			b, _, logsB := testbin.Start(t, bin, env...)
			testbin.WaitHealth(t, b, 200, 15*time.Second)
			if err := procA.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-procA.Exited()
			var rec deliveryRec
			testbin.Eventually(t, 4*(2*time.Second+5*time.Second+10*time.Second), "the push sent by B", func() bool {
				if recs := deliveriesAt(b, nid); len(recs) == 1 {
					rec = recs[0]
				}
				return rec.State == "sent"
			})
			if n := taken(); n != 1 || rec.Attempts != 2 {
				t.Fatalf("pushes taken %d, attempts %d; want 1 taken after 2 attempts; B's log:\n%s", n, rec.Attempts, logsB)
			}
		})
	}
}
