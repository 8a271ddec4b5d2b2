package publish

import (
	"errors"
	"strings"
	"testing"

	"roomhub/internal/env"
)

// PUBLISH_MAX_BYTES is 65536 unset, and a value out of its bounds stops
// start-up naming it.
func TestLoadConfig(t *testing.T) {
	if c := DefaultConfig(); c.MaxDataBytes != 65536 {
		t.Fatalf("default PUBLISH_MAX_BYTES %d, want 65536 (DESIGN.md)", c.MaxDataBytes)
	}
	lookup := func(v string) func(string) (string, bool) {
		return func(name string) (string, bool) { return v, name == "PUBLISH_MAX_BYTES" }
	}
	if c, err := LoadConfig(lookup("1048576")); err != nil || c.MaxDataBytes != 1<<20 {
		t.Fatalf("PUBLISH_MAX_BYTES=1048576: %+v, %v", c, err)
	}
	for _, v := range []string{"12", "x", "67108865"} {
		_, err := LoadConfig(lookup(v))
		var e *env.Error
		if !errors.As(err, &e) || e.Var != "PUBLISH_MAX_BYTES" || !strings.Contains(err.Error(), "PUBLISH_MAX_BYTES") {
			t.Errorf("PUBLISH_MAX_BYTES=%s: err = %v, want an error naming it", v, err)
		}
	}
}
