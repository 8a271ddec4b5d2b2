package webpush

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
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

// Of is the push to user for a hand-off's inbox items (a digest has
// several: the first is shown, with how many more), its Topic (from the
// group key) and Urgency (from the severity). The payload always fits
// MaxPayload: the body, then the title, are cut to fit.
func Of(user int64, items []json.RawMessage) (Push, Message, bool) {
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
	m := Message{NotificationID: it.NotificationID, UserID: strconv.FormatInt(user, 10), Severity: it.Severity, Tag: it.NotificationID}
	m.Title = pick("title", "subject", "heading")
	if m.Title == "" {
		m.Title = humanType(it.EventType)
	}
	m.Body = pick("text", "body", "content", "message", "description")
	if u := pick("url"); SafeURL(u) {
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

// SafeURL says whether u may be where a notification opens: an absolute
// http(s) URL with a host, or a path on the page's own origin. A path that
// a browser reads as another host ("//evil.example/x", "/\evil.example/x":
// a backslash is a slash to it) is not one, nor is anything with a
// backslash or a control character.
func SafeURL(u string) bool {
	if u == "" || strings.ContainsFunc(u, func(r rune) bool { return r == '\\' || r < 0x20 || r == 0x7f }) {
		return false
	}
	p, err := url.Parse(u)
	if strings.HasPrefix(u, "/") {
		return err == nil && !strings.HasPrefix(u, "//")
	}
	return err == nil && (p.Scheme == "https" || p.Scheme == "http") && p.Host != "" && p.User == nil
}
