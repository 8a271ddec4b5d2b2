package inbox

import (
	"slices"
	"strings"
	"testing"
	"time"

	"roomhub/hub/delivery"
)

func TestParseNotificationID(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"42:1708070400000-0", "42:1708070400000-0"},
		{"42:1708070400000", "42:1708070400000-0"},
		{"9223372036854775807:1-18446744073709551615", "9223372036854775807:1-18446744073709551615"},
	} {
		if _, _, got, err := ParseNotificationID(c.in); err != nil || got != c.want {
			t.Errorf("%q → %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "42", ":1-0", "42:", "0:1-0", "-1:1-0", "42:0", "42:0-0", "42:x", "42:1-0:1", " 42:1-0", "42:1-0\n"} {
		if _, _, _, err := ParseNotificationID(in); err == nil {
			t.Errorf("%q parsed", in)
		}
	}
}

func FuzzParseNotificationID(f *testing.F) {
	for _, s := range []string{"42:1708070400000-0", "1:1", "0:0", "42:1-18446744073709551616", "x:y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		room, id, canonical, err := ParseNotificationID(s)
		if err != nil {
			return
		}
		if room <= 0 || id.IsZero() || strings.ContainsAny(canonical, "\r\n\"\\") {
			t.Fatalf("%q → room %d id %v canonical %q", s, room, id, canonical)
		}
		r2, id2, c2, err := ParseNotificationID(canonical)
		if err != nil || r2 != room || id2 != id || c2 != canonical {
			t.Fatalf("canonical %q does not round-trip", canonical)
		}
	})
}

// A publish's options hash as they did before deliveries existed when it
// gives none of the delivery fields: a retry across the upgrade matches.
func TestOptionsBody_UnchangedWithoutDeliveryFields(t *testing.T) {
	if got := (Options{Severity: "high", Tags: []string{"a"}}).body(); got != "\x00"+`{"severity":"high","tags":["a"]}` {
		t.Fatalf("body %q", got)
	}
	none := delivery.Rules{}
	if got := (Options{Options: delivery.Options{Delivery: &none}}).body(); got != "\x00"+`{"delivery":{}}` {
		t.Fatalf("delivery {} hashes as %q: it must differ from no delivery field", got)
	}
}

// Tags are refused at the first distinct one too many, before anything
// after it is looked at: 72,000 distinct tags took 9.3 s of CPU when the
// whole list was de-duplicated (quadratically) before the count check.
func TestOptionsCheck_TooManyTagsStopAtTheNinth(t *testing.T) {
	tags := []string{"a", "b", "a", "c", "d", "e", "f", "g", "h", "b"}
	o, err := Options{Tags: tags}.check(time.Hour)
	if err != nil || !slices.Equal(o.Tags, []string{"a", "b", "c", "d", "e", "f", "g", "h"}) {
		t.Fatalf("eight distinct tags: %v %v", o.Tags, err)
	}
	tags = append(tags, "i")
	for range 100000 {
		tags = append(tags, "NOT A TAG") // never looked at
	}
	_, err = Options{Tags: tags}.check(time.Hour)
	if err == nil || !strings.Contains(err.Error(), "at most 8 distinct tags") {
		t.Fatalf("nine distinct tags, then 100,000 bad ones: %v, want the count refused first", err)
	}
}
