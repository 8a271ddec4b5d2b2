package delivery

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"roomhub/hub"
)

func testConfig() Config {
	c := DefaultConfig()
	c.Channels = []string{"push", "email"}
	c.SinkURL = "http://127.0.0.1:1/"
	return c
}

func TestParseRules_RefusesWhatIsNotARule(t *testing.T) {
	cfg := testConfig()
	for _, tc := range []struct{ text, want string }{
		{`{`, "not the rules' JSON"},
		{`{"comment.created":{"push":{"after":1}}}`, "unknown field"},
		{`{"comment.created":{"sms":{}}}`, `channel "sms" is not in DELIVERY_CHANNELS`},
		{`{"presence.update":{"push":{}}}`, "not publishable"},
		{`{"comment.created":{"push":{"afterSecs":604801}}}`, "afterSecs must be 0 to 604800"},
		{`{"comment.created":{"push":{"digestSecs":86401}}}`, "digestSecs must be 0 to 86400"},
		{`{"comment.created":{"push":{"unless":"clicked"}}}`, "unless must be seen, read or none"},
		{`{"comment.created":{"push":{}}} {}`, "more than one JSON value"},
		{`@/nonexistent/rules.json`, "no such file"},
	} {
		if _, err := ParseRules(tc.text, cfg, hub.DefaultConfig()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseRules(%s): %v, want an error saying %q", tc.text, err, tc.want)
		}
	}
	path := filepath.Join(t.TempDir(), "rules.json")
	if err := os.WriteFile(path, []byte(`{"comment.created":{"email":{"afterSecs":900,"unless":"read","digestSecs":3600}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	rules, err := ParseRules("@"+path, cfg, hub.DefaultConfig())
	if err != nil || rules["comment.created"]["email"] != (Rule{AfterSecs: 900, Unless: "read", DigestSecs: 3600}) {
		t.Fatalf("rules from a file: %+v %v", rules, err)
	}
	env := map[string]string{"DELIVERY_CHANNELS": "push,email", "DELIVERY_SINK_URL": "http://127.0.0.1:1/", "DELIVERY_RULES": `{"comment.created":{"fax":{}}}`}
	if _, err := LoadConfig(vars(env), hub.DefaultConfig()); err == nil || !strings.Contains(err.Error(), "DELIVERY_RULES") {
		t.Fatalf("LoadConfig names the variable: %v", err)
	}
	env["DELIVERY_RULES"], env["DELIVERY_CAPS"] = "", `{"push":{"perHour":-1}}`
	if _, err := LoadConfig(vars(env), hub.DefaultConfig()); err == nil || !strings.Contains(err.Error(), "DELIVERY_CAPS") {
		t.Fatalf("LoadConfig names the variable: %v", err)
	}
}

func TestClassify_GatewayAnswers(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		status     int
		body, ra   string
		sent, retr bool
		code       string
		after      time.Duration
	}{
		{200, "", "", true, false, "", 0},
		{204, "", "", true, false, "", 0},
		{301, "", "", false, true, "REDIRECT", 0},
		{500, "", "", false, true, "HTTP_500", 0},
		{503, `{"errorCode":"UNAVAILABLE"}`, "7", false, true, "UNAVAILABLE", 7 * time.Second},
		{503, `{"errorCode":"UNREGISTERED"}`, "", false, false, "UNREGISTERED", 0},
		{400, `{"errorCode":"QUOTA_EXCEEDED"}`, "", false, true, "QUOTA_EXCEEDED", 0},
		{400, `{"errorCode":"INTERNAL"}`, "", false, true, "INTERNAL", 0},
		{400, `{"errorCode":"SENDER_ID_MISMATCH"}`, "", false, false, "SENDER_ID_MISMATCH", 0},
		{401, `{"errorCode":"THIRD_PARTY_AUTH_ERROR"}`, "", false, false, "THIRD_PARTY_AUTH_ERROR", 0},
		{404, `not json`, "", false, false, "HTTP_404", 0},
		{400, `{"errorCode":"a\nb"}`, "", false, false, "HTTP_400", 0},
		{408, "", "", false, true, "HTTP_408", 0},
		{429, "", now.Add(time.Minute).Format(http.TimeFormat), false, true, "HTTP_429", time.Minute},
	} {
		a := classify(tc.status, []byte(tc.body), tc.ra, now)
		if a.sent != tc.sent || a.retryable != tc.retr || a.code != tc.code || a.retryAfter != tc.after {
			t.Errorf("%d %s (Retry-After %q): %+v", tc.status, tc.body, tc.ra, a)
		}
	}
}

func TestBackoff_DoublesWithJitterAndHonoursRetryAfter(t *testing.T) {
	for attempt, want := range map[int]time.Duration{1: 5 * time.Second, 2: 10 * time.Second, 5: 80 * time.Second, 20: maxBackoff} {
		for range 50 {
			w := backoff(5*time.Second, attempt, 0)
			if w < want*8/10 || w > want*12/10 {
				t.Fatalf("attempt %d waits %v, want %v ± 20%%", attempt, w, want)
			}
		}
	}
	if w := backoff(5*time.Second, 1, time.Hour); w != time.Hour {
		t.Fatalf("Retry-After of an hour: waits %v", w)
	}
}

func TestQuietHours_EndAcrossMidnightZonesAndDST(t *testing.T) {
	at := func(zone, local string) time.Time {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		tm, err := time.ParseInLocation("2006-01-02 15:04", local, loc)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, tc := range []struct {
		q         QuietHours
		zone, now string
		end       string // local, "" when not quiet
	}{
		{QuietHours{"22:00", "07:00", "Asia/Seoul"}, "Asia/Seoul", "2026-11-23 23:30", "2026-11-24 07:00"},
		{QuietHours{"22:00", "07:00", "Asia/Seoul"}, "Asia/Seoul", "2026-11-24 06:59", "2026-11-24 07:00"},
		{QuietHours{"22:00", "07:00", "Asia/Seoul"}, "Asia/Seoul", "2026-11-24 07:00", ""},
		{QuietHours{"22:00", "07:00", "Asia/Seoul"}, "Asia/Seoul", "2026-11-24 12:00", ""},
		{QuietHours{"13:00", "14:00", "Europe/Berlin"}, "Europe/Berlin", "2026-11-24 13:15", "2026-11-24 14:00"},
		{QuietHours{"13:00", "14:00", "Europe/Berlin"}, "Europe/Berlin", "2026-11-24 14:15", ""},
		// The same instant is quiet in Seoul and not in New York.
		{QuietHours{"22:00", "07:00", "America/New_York"}, "Asia/Seoul", "2026-11-23 23:30", ""},
		// DST begins in New York at 02:00 on 8 March 2026: the night is an
		// hour shorter, and the hours end at 07:00 local (EDT).
		{QuietHours{"22:00", "07:00", "America/New_York"}, "America/New_York", "2026-03-07 23:00", "2026-03-08 07:00"},
		// and ends at 02:00 on 1 November 2026: an hour longer.
		{QuietHours{"22:00", "07:00", "America/New_York"}, "America/New_York", "2026-10-31 22:30", "2026-11-01 07:00"},
	} {
		now := at(tc.zone, tc.now)
		got := tc.q.EndAfter(now)
		want := time.Time{}
		if tc.end != "" {
			want = at(tc.q.TimeZone, tc.end)
		}
		if !got.Equal(want) {
			t.Errorf("%+v at %s %s: ends %v, want %v", tc.q, tc.now, tc.zone, got, want)
		}
	}
	ny := at("America/New_York", "2026-03-07 23:00")
	if d := (QuietHours{"22:00", "07:00", "America/New_York"}).EndAfter(ny).Sub(ny); d != 7*time.Hour {
		t.Errorf("the night DST begins lasts %v from 23:00, want 7h", d)
	}
	ny = at("America/New_York", "2026-10-31 23:00")
	if d := (QuietHours{"22:00", "07:00", "America/New_York"}).EndAfter(ny).Sub(ny); d != 9*time.Hour {
		t.Errorf("the night DST ends lasts %v from 23:00, want 9h", d)
	}
}

// A publish's delivery field and a user's quiet hours come from the network:
// whatever they hold, reading them neither panics nor lets a bad value by.
func FuzzOverrideAndQuietHours(f *testing.F) {
	for _, s := range []string{`{"push":{"afterSecs":1,"unless":"seen","onlyIfOffline":true,"digestSecs":60}}`,
		`{}`, `{"push":null}`, `[]`, `{"push":{"afterSecs":-1}}`, `{"sms":{}}`} {
		f.Add([]byte(s), "22:00", "07:00", "Asia/Seoul", int64(1795459200))
	}
	cfg := testConfig()
	f.Fuzz(func(t *testing.T, raw []byte, start, end, zone string, unix int64) {
		if rs, err := ParseOverride(raw); err == nil && rs.check(cfg) == nil {
			for ch, r := range rs {
				if !cfg.On(ch) || r.AfterSecs < 0 || r.AfterSecs > MaxAfterSecs || r.DigestSecs < 0 || r.DigestSecs > MaxDigestSecs {
					t.Fatalf("accepted %s: %+v", raw, rs)
				}
			}
		}
		q := QuietHours{Start: start, End: end, TimeZone: zone}
		now := time.Unix(unix%(1<<34), 0)
		if e := q.EndAfter(now); !e.IsZero() && (!e.After(now) || e.Sub(now) > 25*time.Hour) {
			t.Fatalf("%+v at %v ends at %v", q, now, e)
		}
	})
}

// "*" is the rule of every event type without an entry of its own; a
// channel that is on but selected by no rule is named in a warning at
// start (issue 43, 2).
func TestRules_AnyTypeAndChannelsNoRuleSelects(t *testing.T) {
	cfg := testConfig()
	cfg.Rules = `{"*":{"push":{"afterSecs":5}},"like.toggled":{"push":{"afterSecs":60}}}`
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	core := hub.DefaultConfig()
	d, err := New(hub.New(core, nil, log, hub.NewMetrics(core.EventTypes)), cfg, log, Items{})
	if err != nil {
		t.Fatal(err)
	}
	for typ, want := range map[string]string{"comment.created": `[{"c":"push","a":5,"u":"none","o":0,"d":0}]`, "like.toggled": `[{"c":"push","a":60,"u":"none","o":0,"d":0}]`} {
		if p, err := d.Plan(typ, Options{}); err != nil || p.JSON != want {
			t.Errorf("%s: %+v %v, want %s", typ, p, err, want)
		}
	}
	if !strings.Contains(logs.String(), "channel=email") || strings.Contains(logs.String(), "channel=push") {
		t.Errorf("the warning names email alone (on, no rule): %s", logs.String())
	}
}
