package delivery

import (
	"math"
	"testing"
)

// FuzzParseDeadCursor: any after= a client sends is a cursor or an error
// (never a panic, never a NaN, infinite or negative place), and every
// cursor the hub hands out reads back as itself.
func FuzzParseDeadCursor(f *testing.F) {
	for _, s := range []string{"", "nonsense!", deadCursor(deadRef{ms: 1795615057468, member: "7|42:1-0|push"}),
		"TmFOCjF8eA", "LUluZgoxfHg", "MQ", "MQo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseDeadCursor(s)
		if err != nil {
			return
		}
		if math.IsNaN(r.ms) || math.IsInf(r.ms, 0) || r.ms < 0 {
			t.Fatalf("cursor %q read as place %v", s, r.ms)
		}
		back, err := parseDeadCursor(deadCursor(r))
		if err != nil || back.ms != r.ms || back.member != r.member {
			t.Fatalf("cursor %+v does not read back: %+v %v", r, back, err)
		}
	})
}
