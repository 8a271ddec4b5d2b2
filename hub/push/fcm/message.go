package fcm

import (
	"encoding/json"
	"strconv"
	"time"

	"roomhub/hub/push"
)

// maxMessage bounds a message's JSON: FCM takes 4 KB of payload; the
// body, then the title, are cut to fit.
const maxMessage = 4000

// message is the body of messages:send (FCM HTTP v1).
type message struct {
	Message struct {
		Token        string            `json:"token"`
		Notification notification      `json:"notification"`
		Data         map[string]string `json:"data"`
		Android      android           `json:"android"`
		APNS         apnsConfig        `json:"apns"`
	} `json:"message"`
}

type notification struct {
	Title string `json:"title"`
	Body  string `json:"body"`
}

type android struct {
	Priority    string `json:"priority"` // HIGH or NORMAL
	TTL         string `json:"ttl"`      // "<secs>s"
	CollapseKey string `json:"collapse_key,omitempty"`
}

type apnsConfig struct {
	Headers map[string]string `json:"headers"`
	Payload struct {
		APS aps `json:"aps"`
	} `json:"payload"`
}

type aps struct {
	Badge    *int   `json:"badge,omitempty"`
	ThreadID string `json:"thread-id,omitempty"`
}

// messageOf is the message to token for face f: loud (HIGH, apns-priority
// 10) for high and critical, quiet (5) for low; kept as long as the item
// lives (at most a day); collapsed and threaded by its group; iOS's badge
// the unread count (none when badge < 0).
func messageOf(token string, f push.Face, badge int, now time.Time) message {
	f = push.Fit(f, maxMessage, func(f push.Face) int {
		b, _ := json.Marshal(build(token, f, badge, now))
		return len(b)
	})
	return build(token, f, badge, now)
}

func build(token string, f push.Face, badge int, now time.Time) message {
	var m message
	mm := &m.Message
	mm.Token = token
	mm.Notification = notification{Title: f.Title, Body: f.Body}
	mm.Data = map[string]string{"notificationId": f.NotificationID, "type": f.EventType, "severity": f.Severity}
	if f.URL != "" { // none when the item has none
		mm.Data["url"] = f.URL
	}
	mm.Android = android{Priority: "NORMAL", TTL: strconv.Itoa(int(f.TTL(now).Seconds())) + "s", CollapseKey: f.GroupKey}
	if f.Loud() {
		mm.Android.Priority = "HIGH"
	}
	prio := "10"
	if f.Severity == "low" {
		prio = "5"
	}
	mm.APNS.Headers = map[string]string{"apns-priority": prio}
	if badge >= 0 {
		mm.APNS.Payload.APS.Badge = &badge
	}
	mm.APNS.Payload.APS.ThreadID = f.GroupKey
	return m
}
