package api

import (
	"errors"
	"strings"
	"testing"

	"roomhub/hub"
)

func lookup(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func TestLoadConfig_Defaults(t *testing.T) {
	c, err := LoadConfig(lookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 8083 || c.PublishMaxBytes != 65536 || c.StreamMaxRooms != 32 || c.JWTSecret != DevJWTSecret ||
		c.InternalAPIKey != hub.DevInternalAPIKey || c.TLS() || !c.DevRoutes() || c.Production() {
		t.Fatalf("defaults differ from DESIGN.md: %+v", c)
	}
}

func TestLoadConfig_BadValueNamesTheVariable(t *testing.T) {
	for _, tc := range []struct{ name, val string }{
		{"SERVER_PORT", "http"},
		{"SERVER_PORT", "70000"},
		{"ALLOWED_ORIGINS", "example.com"},
		{"ALLOWED_ORIGINS", "*"},
		{"STREAM_MAX_ROOMS", "0"},
		{"PUBLISH_MAX_BYTES", "12"},
	} {
		t.Run(tc.name+"="+tc.val, func(t *testing.T) {
			_, err := LoadConfig(lookup(map[string]string{tc.name: tc.val}))
			var ce *hub.ConfigError
			if !errors.As(err, &ce) || ce.Var != tc.name || !strings.Contains(err.Error(), tc.name) {
				t.Fatalf("err = %v, want a ConfigError naming %s", err, tc.name)
			}
		})
	}
	var ce *hub.ConfigError
	if _, err := LoadConfig(lookup(map[string]string{"HUB_ENV": "production"})); !errors.As(err, &ce) || ce.Var != "JWT_SECRET" {
		t.Fatalf("err = %v, want the dev JWT_SECRET refused in production", err)
	}
	if _, err := LoadConfig(lookup(map[string]string{"TLS_CERT_FILE": "/c.pem"})); !errors.As(err, &ce) || ce.Var != "TLS_KEY_FILE" {
		t.Fatalf("err = %v, want TLS_KEY_FILE required with TLS_CERT_FILE", err)
	}
	c, err := LoadConfig(lookup(map[string]string{"ALLOWED_ORIGINS": "http://a.test,https://b.test", "JWT_SECRET": "s"}))
	if err != nil || len(c.AllowedOrigins) != 2 || c.DevRoutes() {
		t.Fatalf("origins %v, dev routes %v, %v", c.AllowedOrigins, c.DevRoutes(), err)
	}
}
