package webpush

import (
	"encoding/json"
	"strconv"

	"roomhub/hub/push"
)

// Message is what a push carries to the service worker: the inbox item's
// face (roomhub-sw.js shows it) and the user it is for (the worker drops a
// push for another user than the one signed in on that browser).
type Message struct {
	NotificationID string `json:"notificationId"`
	UserID         string `json:"userId"`
	Title          string `json:"title"`
	Body           string `json:"body"`
	URL            string `json:"url,omitempty"`
	Severity       string `json:"severity"`
	Tag            string `json:"tag"`
}

// Of is the push to user for a hand-off's inbox items (a digest has
// several: the first is shown, with how many more), its Topic (from the
// group key) and Urgency (from the severity). The payload always fits
// MaxPayload: the body, then the title, are cut to fit.
func Of(user int64, items []json.RawMessage) (Push, Message, bool) {
	f, ok := push.FaceOf(items)
	if !ok {
		return Push{}, Message{}, false
	}
	m := Message{NotificationID: f.NotificationID, UserID: strconv.FormatInt(user, 10), Title: f.Title, Body: f.Body,
		URL: f.URL, Severity: f.Severity, Tag: f.NotificationID}
	topic := ""
	if f.GroupKey != "" {
		m.Tag, topic = "group:"+f.GroupKey, Topic(f.GroupKey)
	}
	b := fit(&m)
	return Push{Payload: b, TTL: push.DefaultTTL, Urgency: Urgency(f.Severity), Topic: topic}, m, true
}

// fit marshals m, cutting the body and then the title until it fits.
func fit(m *Message) []byte {
	for {
		b, _ := json.Marshal(m)
		over := len(b) - MaxPayload
		if over <= 0 {
			return b
		}
		switch {
		case m.Body != "":
			m.Body = push.Cut(m.Body, len(m.Body)-over-8)
		case m.Title != "":
			m.Title = push.Cut(m.Title, len(m.Title)-over-8)
		default:
			m.URL = ""
		}
	}
}
