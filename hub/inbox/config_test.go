package inbox

import (
	"errors"
	"strings"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/internal/env"
)

// The defaults are DESIGN's; a bad value names its variable, and a sink
// URL's credentials are never printed.
func TestLoadConfig(t *testing.T) {
	c := DefaultConfig()
	if c.Retention != 30*24*time.Hour || c.MaxEntries != 1000 || c.WriteBehindInterval != 30*time.Second ||
		c.WriteBehindBatch != 200 || c.ReadSinkURL != "" || c.OutboxGrace != 10*time.Second {
		t.Fatalf("defaults differ from DESIGN.md: %+v", c)
	}
	for name, val := range map[string]string{"INBOX_RETENTION_DAYS": "0", "INBOX_MAX_ENTRIES": "lots",
		"WRITE_BEHIND_INTERVAL_SECS": "-1", "WRITE_BEHIND_BATCH_SIZE": "0", "READ_SINK_URL": "ftp://sink:hunter2secret@example.com/x"} {
		_, err := LoadConfig(env.Map(map[string]string{name: val}))
		var ce *hub.ConfigError
		if !errors.As(err, &ce) || ce.Var != name {
			t.Errorf("%s=%s: err = %v, want a ConfigError naming it", name, val, err)
		} else if strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("the message %q shows the credentials", err)
		}
	}
}
