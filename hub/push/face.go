package push

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Face is what a phone or a browser shows of a hand-off's inbox items: the
// first item's title and body (a digest's body says how many more), where
// it opens, and what the services need to keep and group it.
type Face struct {
	NotificationID string
	EventType      string
	Title          string
	Body           string
	URL            string // "" unless SafeURL
	Severity       string
	GroupKey       string    // the item's group ("" none)
	ExpiresAt      time.Time // the item's expiry (zero: none)
}

// item is what a push reads of an inbox item.
type item struct {
	NotificationID string         `json:"notificationId"`
	EventType      string         `json:"eventType"`
	Data           map[string]any `json:"data"`
	Severity       string         `json:"severity"`
	ExpiresAt      *time.Time     `json:"expiresAt"`
	Group          *struct {
		Key string `json:"key"`
	} `json:"group"`
}

// FaceOf is the face of a hand-off's items; false when they have none (no
// item, or the first one unreadable).
func FaceOf(items []json.RawMessage) (Face, bool) {
	if len(items) == 0 {
		return Face{}, false
	}
	var it item
	if json.Unmarshal(items[0], &it) != nil || it.NotificationID == "" {
		return Face{}, false
	}
	pick := func(keys ...string) string {
		for _, k := range keys {
			if s, ok := it.Data[k].(string); ok && strings.TrimSpace(s) != "" {
				return s
			}
		}
		return ""
	}
	f := Face{NotificationID: it.NotificationID, EventType: it.EventType, Severity: it.Severity}
	if f.Severity == "" {
		f.Severity = "normal"
	}
	f.Title = pick("title", "subject", "heading")
	if f.Title == "" {
		f.Title = humanType(it.EventType)
	}
	f.Body = pick("text", "body", "content", "message", "description")
	if u := pick("url"); SafeURL(u) {
		f.URL = u
	}
	if len(items) > 1 {
		f.Body = strings.TrimSpace(f.Body + " (+" + strconv.Itoa(len(items)-1) + " more)")
	}
	if it.Group != nil {
		f.GroupKey = it.Group.Key
	}
	if it.ExpiresAt != nil {
		f.ExpiresAt = *it.ExpiresAt
	}
	return f, true
}

// DefaultTTL is how long a push service keeps a push for an offline
// device when its item does not expire sooner.
const DefaultTTL = 24 * time.Hour

// TTL is how long a service should keep the push for an offline device:
// until the item expires, at most DefaultTTL.
func (f Face) TTL(now time.Time) time.Duration {
	if f.ExpiresAt.IsZero() {
		return DefaultTTL
	}
	return max(0, min(DefaultTTL, f.ExpiresAt.Sub(now).Truncate(time.Second)))
}

// Loud says whether the face's severity asks to be heard now: high or
// critical.
func (f Face) Loud() bool { return f.Severity == "high" || f.Severity == "critical" }

// Cut keeps at most n bytes of s, whole characters, with an ellipsis.
func Cut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if n >= len(s) {
		return s
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

// Fit cuts f's body, then its title, until size(f) is at most max bytes
// (the message a service takes is bounded: APNs' 4 KB payload).
func Fit(f Face, max int, size func(Face) int) Face {
	for {
		over := size(f) - max
		switch {
		case over <= 0:
			return f
		case f.Body != "":
			f.Body = Cut(f.Body, len(f.Body)-over-8)
		case f.Title != "":
			f.Title = Cut(f.Title, len(f.Title)-over-8)
		case f.URL != "":
			f.URL = ""
		default:
			return f
		}
	}
}
