package topics_test

import (
	"errors"
	"strings"
	"testing"

	"roomhub/hub"
	"roomhub/hub/topics"
)

// A topic key from the network is refused with hub.ErrInvalid unless it is
// 1 to 128 bytes of A-Z a-z 0-9 _ . : - ; one it takes never holds a brace
// (its keys' hash tag would break) nor anything else.
func FuzzCheckKey(f *testing.F) {
	for _, s := range []string{"product:123", "issue:42", "", "a{b}", "x y", strings.Repeat("a", 128), strings.Repeat("a", 129), "ü", "a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := topics.CheckKey(key)
		ok := len(key) >= 1 && len(key) <= 128 && strings.Trim(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:-") == ""
		if ok != (err == nil) || (err != nil && !errors.Is(err, hub.ErrInvalid)) {
			t.Fatalf("CheckKey(%q) = %v, want ok %v", key, err, ok)
		}
	})
}

// User ids from the network: 1 to 10,000 distinct positive ones, else
// hub.ErrInvalid.
func TestCheckIDs(t *testing.T) {
	many := make([]int64, topics.MaxIDs+1)
	for i := range many {
		many[i] = int64(i + 1)
	}
	for _, tc := range []struct {
		ids []int64
		ok  bool
	}{{[]int64{1}, true}, {many[:topics.MaxIDs], true}, {nil, false}, {many, false}, {[]int64{1, 1}, false}, {[]int64{0}, false}, {[]int64{-3}, false}} {
		if err := topics.CheckIDs(tc.ids); (err == nil) != tc.ok || (err != nil && !errors.Is(err, hub.ErrInvalid)) {
			t.Errorf("CheckIDs of %d ids: %v, want ok %v", len(tc.ids), err, tc.ok)
		}
	}
}
