package strictjson

import "testing"

func TestDecodeAndProblem(t *testing.T) {
	var v struct {
		N int `json:"n"`
	}
	for body, want := range map[string]string{
		`{"n":1}`:       "",
		`{"n":1} {}`:    "body must hold one JSON object",
		`{"m":1}`:       `unknown field "m"`,
		`{"n":"x"}`:     "n has the wrong type",
		`[1]`:           "body has the wrong type",
		`not json`:      "body is not a valid JSON object",
		`{"n":1,"n":2}`: `duplicate field "n"`,
		`{"N":1}`:       `unknown field "N"`,
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

// TestDecode_NamesExactlyOnce: a struct's field is named once and in its
// own case, also nested and embedded; free-form objects may hold "a" and
// "A" but never one name twice.
func TestDecode_NamesExactlyOnce(t *testing.T) {
	type inner struct {
		Auth string `json:"auth"`
	}
	type base struct {
		Token string `json:"token"`
	}
	type body struct {
		base
		Keys  inner          `json:"keys"`
		List  []inner        `json:"list"`
		Data  map[string]any `json:"data"`
		Extra *inner         `json:"extra"`
	}
	for text, want := range map[string]string{
		`{"token":"a","keys":{"auth":"x"},"list":[{"auth":"y"}],"data":{"a":1,"A":2},"extra":{"auth":"z"}}`: "",
		`{"token":"a","Token":"b"}`:            `unknown field "Token"`,
		`{"token":"a","token":"b"}`:            `duplicate field "token"`,
		`{"keys":{"auth":"x","AUTH":"y"}}`:     `unknown field "AUTH"`,
		`{"list":[{"auth":"y"},{"Auth":"z"}]}`: `unknown field "Auth"`,
		`{"extra":{"auth":"x","auth":"y"}}`:    `duplicate field "auth"`,
		`{"data":{"a":{"b":1,"b":2}}}`:         `duplicate field "b"`,
		`{"data":{"a":1,"a":2}}`:               `duplicate field "a"`,
	} {
		var v body
		err := Decode([]byte(text), &v)
		got := ""
		if err != nil {
			got = Problem(err)
		}
		if got != want {
			t.Errorf("%s: %q, want %q", text, got, want)
		}
	}
}
