package ingest

import (
	"errors"
	"testing"

	"roomhub/hub"
)

func TestNextID(t *testing.T) {
	for in, want := range map[string]string{
		"5-3": "5-4", "1700000000000-0": "1700000000000-1",
		"7-18446744073709551615": "8-0",
	} {
		if got := nextID(in); got != want {
			t.Errorf("nextID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseDeadCursor(t *testing.T) {
	c, err := ParseDeadCursor("3:1700000000000-7")
	if err != nil || c.P != 3 || c.ID != "1700000000000-7" || c.String() != "3:1700000000000-7" {
		t.Fatalf("ParseDeadCursor: %+v %v", c, err)
	}
	for _, bad := range []string{"", "3", "3:", ":1-0", "-1:1-0", "3:1", "3:x-0", "3:1-x", "3:1-0-0", "x:1-0"} {
		if _, err := ParseDeadCursor(bad); !errors.Is(err, hub.ErrInvalid) {
			t.Errorf("ParseDeadCursor(%q): %v, want ErrInvalid", bad, err)
		}
	}
}

// FuzzParseDeadCursor: whatever the query says, a cursor parses to one that
// prints back the same, or is refused as invalid input.
func FuzzParseDeadCursor(f *testing.F) {
	for _, s := range []string{"3:1700000000000-7", "0:0-0", "3:1-x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseDeadCursor(s)
		if err != nil {
			if !errors.Is(err, hub.ErrInvalid) {
				t.Fatalf("ParseDeadCursor(%q): %v is not ErrInvalid", s, err)
			}
			return
		}
		again, err := ParseDeadCursor(c.String())
		if err != nil || again != c {
			t.Fatalf("ParseDeadCursor(%q) = %+v, which prints as %q and parses to %+v, %v", s, c, c.String(), again, err)
		}
	})
}
