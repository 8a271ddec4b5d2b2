package strictjson

import "testing"

func TestDecodeAndProblem(t *testing.T) {
	var v struct {
		N int `json:"n"`
	}
	for body, want := range map[string]string{
		`{"n":1}`:    "",
		`{"n":1} {}`: "body must hold one JSON object",
		`{"m":1}`:    `unknown field "m"`,
		`{"n":"x"}`:  "n has the wrong type",
		`[1]`:        "body has the wrong type",
		`not json`:   "body is not a valid JSON object",
	} {
		err := Decode([]byte(body), &v)
		if got := ""; err != nil {
			got = Problem(err)
			if got != want {
				t.Errorf("%s: %q, want %q", body, got, want)
			}
		} else if want != "" {
			t.Errorf("%s: decoded, want %q", body, want)
		}
	}
}
