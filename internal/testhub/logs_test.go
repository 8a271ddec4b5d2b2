package testhub

import (
	"roomhub/api"
	"roomhub/hub"
	"testing"
)

func TestLogScan_CatchesALeak(t *testing.T) {
	tok, _ := api.NewTokenVerifier("x").Sign(1, 1)
	for _, line := range []string{"path=/s?token=" + tok, "key=" + hub.DevInternalAPIKey, "s=" + api.DevJWTSecret} {
		s := &secretScanner{}
		if _, _ = s.Write([]byte(line + "\n")); len(s.leaks) != 1 {
			t.Errorf("missed %q", line)
		}
	}
	s := &secretScanner{}
	if _, _ = s.Write([]byte("level=INFO msg=fine room=42\n")); len(s.leaks) != 0 {
		t.Error("flagged a clean line")
	}
}
