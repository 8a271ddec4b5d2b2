package api_test

import (
	"roomhub/api"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
	"strings"
	"testing"
	"time"
)

// JWT_ISSUER and JWT_AUDIENCE are checked when set; STREAM_MAX_LIFETIME_SECS
// ends a stream whose token lives longer, as its expiry would.
func TestHardening_TokenIssuerAudienceAndStreamLifetime(t *testing.T) {
	th := testhub.StartWith(t, testredis.Start(t).Addr(), nil, func(c *api.Config) {
		c.JWTIssuer, c.JWTAudience, c.StreamLifetime = "https://auth.test", "roomhub", time.Second
	})
	for name, v := range map[string]*api.TokenVerifier{
		"no iss or aud":  api.NewTokenVerifier(th.HTTP.JWTSecret),
		"another issuer": api.NewTokenVerifier(th.HTTP.JWTSecret).Expect("https://other.test", "roomhub"),
		"another aud":    api.NewTokenVerifier(th.HTTP.JWTSecret).Expect("https://auth.test", "other"),
	} {
		tok, _ := v.Sign(80, time.Hour)
		if code, env := th.Get(t, "/api/v1/notifications/unread", tok); code != 401 || env.Code != "AUTH4001" {
			t.Errorf("a token with %s: %d %s, want 401 AUTH4001", name, code, env.Code)
		}
	}
	tok, _ := th.Tokens.Sign(80, time.Hour)
	if code, _ := th.Get(t, "/api/v1/notifications/unread", tok); code != 200 {
		t.Fatalf("the right iss and aud: %d", code)
	}
	opened := time.Now()
	c := testhub.OpenSSE(t, th.URL+"/api/v1/rooms/310/stream", tok, "")
	for _, f := range c.Ended(t, 15*time.Second) {
		if strings.HasPrefix(f.Event, "system.") {
			t.Fatalf("the stream ended with %s, not at its lifetime", f.Event)
		}
	}
	if lived := time.Since(opened); lived < time.Second {
		t.Fatalf("the stream ended after %v, before STREAM_MAX_LIFETIME_SECS", lived)
	}
}
