package webpush

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Message is what a push carries to the service worker: the inbox item's
// face (roomhub-sw.js shows it).
type Message struct {
	NotificationID string `json:"notificationId"`
	Title          string `json:"title"`
	Body           string `json:"body"`
	URL            string `json:"url,omitempty"`
	Severity       string `json:"severity"`
	Tag            string `json:"tag"`
}

// item is what a push reads of an inbox item.
type item struct {
	NotificationID string         `json:"notificationId"`
	EventType      string         `json:"eventType"`
	Data           map[string]any `json:"data"`
	Severity       string         `json:"severity"`
	Group          *struct {
		Key string `json:"key"`
	} `json:"group"`
}

// Of is the push for a hand-off's inbox items (a digest has several: the
// first is shown, with how many more), its Topic (from the group key) and
// Urgency (from the severity). The payload always fits MaxPayload: the body,
// then the title, are cut to fit.
func Of(items []json.RawMessage) (Push, Message, bool) {
	if len(items) == 0 {
		return Push{}, Message{}, false
	}
	var it item
	if json.Unmarshal(items[0], &it) != nil || it.NotificationID == "" {
		return Push{}, Message{}, false
	}
	pick := func(keys ...string) string {
		for _, k := range keys {
			if s, ok := it.Data[k].(string); ok && strings.TrimSpace(s) != "" {
				return s
			}
		}
		return ""
	}
	m := Message{NotificationID: it.NotificationID, Severity: it.Severity, Tag: it.NotificationID}
	m.Title = pick("title", "subject", "heading")
	if m.Title == "" {
		m.Title = humanType(it.EventType)
	}
	m.Body = pick("text", "body", "content", "message", "description")
	if u := pick("url"); strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "/") {
		m.URL = u
	}
	if len(items) > 1 {
		m.Body = strings.TrimSpace(m.Body + " (+" + strconv.Itoa(len(items)-1) + " more)")
	}
	topic := ""
	if it.Group != nil && it.Group.Key != "" {
		m.Tag, topic = "group:"+it.Group.Key, Topic(it.Group.Key)
	}
	b := fit(&m)
	return Push{Payload: b, TTL: defaultTTL, Urgency: Urgency(it.Severity), Topic: topic}, m, true
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
			m.Body = cut(m.Body, len(m.Body)-over-8)
		case m.Title != "":
			m.Title = cut(m.Title, len(m.Title)-over-8)
		default:
			m.URL = ""
		}
	}
}

// cut keeps at most n bytes of s, whole characters, with an ellipsis.
func cut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func humanType(t string) string {
	s := strings.TrimSpace(strings.NewReplacer(".", " ", "_", " ", "-", " ").Replace(t))
	if s == "" {
		return "Notification"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
