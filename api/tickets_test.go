package api_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"roomhub/api"
	"roomhub/hub"
	"roomhub/internal/testhub"
	"roomhub/internal/testpush"
	"roomhub/internal/testredis"
)

// A stream ticket (hardening IV, 10: a token in a stream URL ends up in an
// ingress's access log) opens one stream, once, as the user whose token
// made it, on any instance; the stream is that user's (their presence,
// their room grant); used, unknown or expired it is 401; Redis keeps it 30
// s at most, under a hashed name; ?token= still works.
func TestStreamTickets_OpenOneStreamOnce(t *testing.T) {
	rs := testredis.Start(t)
	claim := func(c *testhub.Configs) { c.RoomAuth = hub.RoomAuthClaim }
	a, b := testhub.Start(t, rs.Addr(), claim), testhub.Start(t, rs.Addr(), claim)
	tok, err := a.Tokens.Sign(31, time.Hour, []int64{42})
	if err != nil {
		t.Fatal(err)
	}
	ticket := a.TicketOf(t, tok)
	keys, err := a.Redis.Do(t.Context(), a.Redis.B().Keys().Pattern("stream:ticket:*").Build()).AsStrSlice()
	if err != nil || len(keys) != 1 || strings.Contains(keys[0], ticket) {
		t.Fatalf("ticket keys %v (%v), want one, not named by the ticket", keys, err)
	}
	if ms, _ := a.Redis.Do(t.Context(), a.Redis.B().Pttl().Key(keys[0]).Build()).AsInt64(); ms <= 0 || ms > 30_000 {
		t.Fatalf("the ticket lives %d ms, want at most 30 s", ms)
	}
	// Made on a, used on b: the user's stream.
	s := testhub.OpenSSE(t, b.URL+"/api/v1/rooms/42/stream?ticket="+url.QueryEscape(ticket), "", "")
	if p, _ := s.PresenceUpdate(t, testhub.Wait); len(p.OnlineUsers) != 1 || p.OnlineUsers[0] != 31 {
		t.Fatalf("presence on a ticket's stream: %+v, want user 31", p)
	}
	res := a.Publish(t, 42, "comment.created", map[string]any{"n": 1})
	if f := s.Next(t, testhub.Wait); f.ID != res.StreamID {
		t.Fatalf("the ticket's stream got %+v, want the event", f)
	}
	for name, u := range map[string]string{
		"used again": b.URL + "/api/v1/rooms/42/stream?ticket=" + url.QueryEscape(ticket),
		"unknown":    a.URL + "/api/v1/rooms/42/stream?ticket=nosuchticketnosuchticketnosuchtick",
		"too long":   a.URL + "/api/v1/rooms/42/stream?ticket=" + strings.Repeat("x", 100),
	} {
		if _, err := testhub.TryOpenSSE(u, "", ""); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("a ticket %s: %v, want 401", name, err)
		}
	}
	// Expired: Redis forgot it.
	expired := a.TicketOf(t, tok)
	testredis.Do(t, a.Redis, "DEL", hub.StreamTicketKey(expired))
	if _, err := testhub.TryOpenSSE(a.URL+"/api/v1/stream?rooms=42&ticket="+url.QueryEscape(expired), "", ""); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("an expired ticket: %v, want 401", err)
	}
	// The token's grant goes with the ticket: room 43 is not in it.
	if _, err := testhub.TryOpenSSE(a.URL+"/api/v1/rooms/43/stream?ticket="+url.QueryEscape(a.TicketOf(t, tok)), "", ""); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("a ticket for a room outside the grant: %v, want 403", err)
	}
	// The other stream routes take tickets, and ?token= still works.
	testhub.OpenSSE(t, a.URL+"/api/v1/notifications/stream?ticket="+url.QueryEscape(a.TicketOf(t, tok)), "", "")
	testhub.OpenSSE(t, a.URL+"/api/v1/rooms/42/stream?token="+url.QueryEscape(tok), "", "")
	// Without a credential, no ticket.
	if code, _ := a.Do(t, http.MethodPost, "/api/v1/stream-tickets", nil, ""); code != 401 {
		t.Fatalf("a ticket without a token: %d, want 401", code)
	}
}

// ?token= and ?ticket= open the three streams and nothing else: every
// other user route, walked from the server's own routing table, answers
// 401 to a valid token or ticket in its URL (a token in a URL lands in
// access logs), and the ticket is not spent by it (hardening V, 10: the
// middleware was tested alone, not its wiring).
func TestAuth_QueryCredentialsOpenOnlyTheStreams(t *testing.T) {
	th := testhub.StartPushHub(t, testredis.Start(t).Addr(), testpush.Start(t), nil)
	token := th.Token(t, 7)
	streams := map[string]bool{}
	checked := 0
	for _, r := range th.API.Routes() {
		if !strings.HasPrefix(r.Path, "/api/v1/") || strings.Contains(r.Path, "/internal/") ||
			strings.HasPrefix(r.Path, "/api/v1/notifications/publish") || strings.HasSuffix(r.Path, "/vapid-public-key") {
			continue // the internal key's routes, and the one public route
		}
		path := strings.NewReplacer(":roomId", "42", ":notificationId", "42:1-0", ":id", "abc").Replace(r.Path)
		if strings.HasSuffix(path, "/stream") {
			streams[r.Path] = true
			continue
		}
		ticket := th.TicketOf(t, token)
		for _, q := range []string{"token=" + url.QueryEscape(token), "ticket=" + ticket} {
			code, env := th.Do(t, r.Method, path+"?"+q, map[string]string{"Content-Type": "application/json"}, "{}")
			if code != 401 || env.Code != "AUTH4001" {
				t.Errorf("%s %s?%.6s…: %d %s, want 401 AUTH4001", r.Method, r.Path, q, code, env.Code)
			}
		}
		resp, err := http.Get(th.URL + "/api/v1/notifications/stream?ticket=" + ticket) // not spent by the refusal
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s %s spent the ticket: the stream then answered %d", r.Method, r.Path, resp.StatusCode)
		}
		checked++
	}
	if checked < 20 || len(streams) != 3 {
		t.Fatalf("walked %d user routes and %d streams, want every one (20+ and 3)", checked, len(streams))
	}
	for path := range streams {
		p := strings.Replace(path, ":roomId", "42", 1)
		sep := "?"
		if p == "/api/v1/stream" {
			p, sep = p+"?rooms=42", "&"
		}
		resp, err := http.Get(th.URL + p + sep + "token=" + url.QueryEscape(token))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s?token=: %d, want the stream", path, resp.StatusCode)
		}
	}
}

// An address that has spent its budget of failed credentials gets 429 for
// a ticket before the hub asks Redis for it (hardening V, 19: 60 bogus
// tickets from one address made 60 GETDELs).
func TestStreamTickets_AnAddressOverItsBudgetCostsRedisNothing(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.StartWith(t, rs.Addr(), nil, func(c *api.Config) { c.IPRequests = api.Budget{PerSec: 0.01, Burst: 5} })
	getdels := func() int64 {
		info, err := th.Redis.Do(t.Context(), th.Redis.B().Info().Section("commandstats").Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := strings.Cut(info, "cmdstat_getdel:calls=")
		n, _ := strconv.ParseInt(rest[:strings.IndexAny(rest+",", ",")], 10, 64)
		return n
	}
	before := getdels()
	codes := map[int]int{}
	for i := range 60 {
		resp, err := http.Get(th.URL + "/api/v1/notifications/stream?ticket=bogus" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	if n := getdels() - before; codes[401] != 5 || codes[429] != 55 || n > 5 {
		t.Fatalf("60 bogus tickets: %v, %d GETDELs; want 5 × 401, 55 × 429 and 5 GETDELs", codes, n)
	}
}
