package api

import (
	"errors"
	"testing"
)

func FuzzDecodeSettings(f *testing.F) {
	for _, s := range []string{`{"mutedEventTypes":["comment.created"]}`, `{"mutedEventTypes":[]}`, `{}`, `[]`, `{"mutedEventTypes":"x"}`, `nope`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req struct {
			MutedEventTypes *[]string `json:"mutedEventTypes"`
		}
		err := decodeStrict(body, &req)
		var e *Error
		if err != nil && (!errors.As(err, &e) || e.Status != 400 || e.Code != "COMMON400") {
			t.Fatalf("error %v is not a 400 COMMON400", err)
		}
	})
}
