package push

import (
	"encoding/hex"
	"strings"
	"testing"

	"roomhub/internal/strictjson"
)

// FuzzRegistrationCheck: a device body the route takes (strict JSON, then
// Check) has a platform of the hub's own, a token of that platform's size
// and alphabet, a label within MaxLabel, an environment only for apns; its
// id is 16 hex digits whatever the token.
func FuzzRegistrationCheck(f *testing.F) {
	for _, s := range []string{
		`{"platform":"fcm","token":"abc:DEF_1-2","label":"Pixel"}`,
		`{"platform":"apns","token":"` + strings.Repeat("a", 64) + `","environment":"sandbox","enabled":false}`,
		`{"platform":"apns","token":"` + strings.Repeat("A", 200) + `","replaces":"` + strings.Repeat("b", 64) + `"}`,
		`{"platform":"fcm","token":"x","environment":"sandbox"}`, `{"platform":"webpush","token":"x"}`, `{}`, `[]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var r Registration
		if strictjson.Decode([]byte(body), &r) != nil || r.Check() != nil {
			return
		}
		for _, tok := range []string{r.Token, r.Replaces} {
			if tok == "" {
				continue // no replaces
			}
			switch r.Platform {
			case "fcm":
				if len(tok) > 4096 || strings.Trim(tok, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:-") != "" {
					t.Fatalf("an fcm token %q passed", tok)
				}
			case "apns":
				if _, err := hex.DecodeString(tok); err != nil || len(tok) < 64 || len(tok) > 200 {
					t.Fatalf("an apns token %q passed", tok)
				}
			default:
				t.Fatalf("platform %q passed", r.Platform)
			}
		}
		if r.Label != nil && len(*r.Label) > MaxLabel || (r.Environment != "" && r.Platform != "apns") {
			t.Fatalf("%+v passed", r)
		}
		if id := DeviceID(r.Platform, r.Token); len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("id %q", id)
		}
	})
}
