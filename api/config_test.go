package api_test

import (
	"errors"
	"strings"
	"testing"

	"roomhub/api"
	"roomhub/hub"
	"roomhub/internal/env"
)

var lookup = env.Map

func TestLoadConfig_Defaults(t *testing.T) {
	c, err := api.LoadConfig(lookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 8083 || c.StreamMaxRooms != 32 || c.JWTSecret != api.DevJWTSecret ||
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
		{"ALLOWED_ORIGINS", "https://*"},
		{"ALLOWED_ORIGINS", "https://*.example.com"},
		{"ALLOWED_ORIGINS", "https://app.example.com?x"},
		{"ALLOWED_ORIGINS", "https://app.example.com/path"},
		{"ALLOWED_ORIGINS", "https://user@app.example.com"},
		{"ALLOWED_ORIGINS", "ftp://app.example.com"},
		{"STREAM_MAX_ROOMS", "0"},
	} {
		t.Run(tc.name+"="+tc.val, func(t *testing.T) {
			_, err := api.LoadConfig(lookup(map[string]string{tc.name: tc.val}))
			var ce *hub.ConfigError
			if !errors.As(err, &ce) || ce.Var != tc.name || !strings.Contains(err.Error(), tc.name) {
				t.Fatalf("err = %v, want a ConfigError naming %s", err, tc.name)
			}
		})
	}
	var ce *hub.ConfigError
	long := strings.Repeat("s", 32)
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"JWT_SECRET": long}, "INTERNAL_API_KEY"}, // a real secret, the public dev key
		{map[string]string{"INTERNAL_API_KEY": long}, "JWT_SECRET"}, // and the reverse
		{map[string]string{"HUB_ENV": "production", "JWT_SECRET": "short", "INTERNAL_API_KEY": long}, "JWT_SECRET"},
		{map[string]string{"HUB_ENV": "production", "JWT_SECRET": long, "INTERNAL_API_KEY": "short"}, "INTERNAL_API_KEY"},
		{map[string]string{"HUB_ENV": "production", "JWT_SECRET": long, "INTERNAL_API_KEY": long}, "JWT_SECRET"}, // one secret for both
		{map[string]string{"CONSOLE_PASSWORD": "short"}, "CONSOLE_PASSWORD"},                                     // under 16 bytes
	} {
		if _, err := api.LoadConfig(lookup(tc.env)); !errors.As(err, &ce) || ce.Var != tc.want || strings.Contains(err.Error(), "short") {
			t.Errorf("%v: err = %v, want %s named (and no secret shown)", tc.env, err, tc.want)
		}
	}
	if _, err := api.LoadConfig(lookup(map[string]string{"HUB_ENV": "production", "JWT_SECRET": long, "INTERNAL_API_KEY": long + "k", "CONSOLE_PASSWORD": long})); !errors.As(err, &ce) || ce.Var != "CONSOLE_PASSWORD" {
		t.Errorf("the console's password equal to JWT_SECRET: %v", err)
	}
	if c, err := api.LoadConfig(lookup(map[string]string{"CONSOLE_PASSWORD": strings.Repeat("p", 16)})); err != nil || !c.Console() {
		t.Errorf("a 16-byte console password: %v", err)
	}
	if _, err := api.LoadConfig(lookup(map[string]string{"HUB_ENV": "production", "JWT_SECRET": long, "INTERNAL_API_KEY": long + "k"})); err != nil {
		t.Errorf("production with two real secrets: %v", err)
	}
	if _, err := api.LoadConfig(lookup(map[string]string{"HUB_ENV": "production"})); !errors.As(err, &ce) || ce.Var != "JWT_SECRET" {
		t.Fatalf("err = %v, want the dev JWT_SECRET refused in production", err)
	}
	if _, err := api.LoadConfig(lookup(map[string]string{"TLS_CERT_FILE": "/c.pem"})); !errors.As(err, &ce) || ce.Var != "TLS_KEY_FILE" {
		t.Fatalf("err = %v, want TLS_KEY_FILE required with TLS_CERT_FILE", err)
	}
	if _, err := api.LoadConfig(lookup(map[string]string{"TLS_CERT_FILE": "/nonexistent/c.pem", "TLS_KEY_FILE": "/nonexistent/k.pem"})); !errors.As(err, &ce) || ce.Var != "TLS_CERT_FILE" {
		t.Fatalf("err = %v, want TLS_CERT_FILE named when it cannot be read", err)
	}
	c, err := api.LoadConfig(lookup(map[string]string{"ALLOWED_ORIGINS": "http://a.test,https://b.test", "JWT_SECRET": "s", "INTERNAL_API_KEY": "k"}))
	if err != nil || len(c.AllowedOrigins) != 2 || c.DevRoutes() {
		t.Fatalf("origins %v, dev routes %v, %v", c.AllowedOrigins, c.DevRoutes(), err)
	}
}
