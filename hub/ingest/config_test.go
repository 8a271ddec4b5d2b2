package ingest

import (
	"errors"
	"testing"

	"roomhub/hub"
	"roomhub/internal/env"
)

// The defaults are DESIGN's; 0 partitions turns ingest off; a bad value
// names its variable.
func TestLoadConfig(t *testing.T) {
	if c := DefaultConfig(); c.Partitions != 16 || c.Batch != 256 {
		t.Fatalf("defaults differ from DESIGN.md: %+v", c)
	}
	if c, err := LoadConfig(env.Map(map[string]string{"INGEST_PARTITIONS": "0"})); err != nil || c.Partitions != 0 {
		t.Fatalf("ingest off: %+v %v", c, err)
	}
	for name, val := range map[string]string{"INGEST_PARTITIONS": "1025", "INGEST_BATCH": "0"} {
		_, err := LoadConfig(env.Map(map[string]string{name: val}))
		var ce *hub.ConfigError
		if !errors.As(err, &ce) || ce.Var != name {
			t.Errorf("%s=%s: err = %v, want a ConfigError naming it", name, val, err)
		}
	}
}
